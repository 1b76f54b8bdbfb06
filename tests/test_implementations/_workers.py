"""Functions run in child processes by the Redis tests (importable by ``spawn``)."""

from __future__ import annotations

import pickle


def append_many(pickled_fs: bytes, path: str, worker: int, count: int) -> list[tuple[int, bytes]]:
    """Unpickle a filesystem and append ``count`` distinct records to ``path``."""
    fs = pickle.loads(pickled_fs)
    out: list[tuple[int, bytes]] = []
    for i in range(count):
        record = f"p{worker}-{i}:{'x' * ((worker * 7 + i) % 13)}\n".encode()
        offset, _ = fs.append_bytes(path, record)
        out.append((offset, record))
    return out
