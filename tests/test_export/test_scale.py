"""Bounded memory and many blocks: small blocks and small files force every boundary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsmemory.export import export_parquet
from fsmemory.fs import open_root

from .conftest import lines, parquet_files, read_rows, record, write_log

pa = pytest.importorskip("pyarrow")


def _big_source(src: str, n: int, days: int) -> None:
    root = open_root(src)
    per_day = n // days
    for d in range(days):
        day = f"2026-02-{d + 1:02d}"
        recs = [
            record(f"fact {i} " + "lorem ipsum " * (i % 7), day=day, n=i,
                   category=f"c{i % 5}", metadata={"i": i} if i % 10 == 0 else None)
            for i in range(per_day)
        ]  # fmt: skip
        for r in recs:
            if r["metadata"] is None:
                del r["metadata"]
        write_log(root, day, lines(recs))


def test_20k_lines_in_small_blocks(tmp_path: Path) -> None:
    src, dest = str(tmp_path / "m"), str(tmp_path / "out")
    _big_source(src, 20_000, 4)
    pool = pa.default_memory_pool()
    report = export_parquet(src, dest, block_size=64 * 1024, max_rows_per_file=3000)
    assert report.rows == 20_000 and report.corrupt_lines == 0
    assert report.parts_written == 4 * 2  # 5000 rows a day, 3000 rows a file
    rows = read_rows(dest)
    assert len(rows) == 20_000
    per_file: dict[str, list[int]] = {}
    for r in rows:
        per_file.setdefault(r["source_file"], []).append(r["line"])
    assert all(v == list(range(1, 5001)) for v in per_file.values())
    assert sum(1 for r in rows if r["metadata"] is not None) == 2000
    # Arrow's peak is about a block and a file's worth, not the 20k lines (~2 MB here).
    assert pool.max_memory() < 64 << 20
    assert len(parquet_files(dest)) == 8


@pytest.mark.slow
def test_200k_lines_peak_memory_is_flat(tmp_path: Path) -> None:
    import resource

    src, dest = str(tmp_path / "m"), str(tmp_path / "out")
    _big_source(src, 200_000, 2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = export_parquet(src, dest, block_size=1 << 20, max_rows_per_file=50_000)
    assert report.rows == 200_000
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    source_bytes = sum(e.stat().st_size for e in os.scandir(os.path.join(src, "logs")))
    assert grown < source_bytes


def test_lines_longer_than_a_block(tmp_path: Path) -> None:
    src, dest = str(tmp_path / "m"), str(tmp_path / "out")
    root = open_root(src)
    recs = [record("short", n=0), record("x" * 5000, n=1), record("tail", n=2)]
    recs += [record(f"r{i}", n=i, metadata={"i": i}) for i in range(3, 300)]
    write_log(root, "2026-02-01", lines(recs))
    report = export_parquet(src, dest, block_size=1024)
    assert report.rows == 300 and report.corrupt_lines == 0
    rows = read_rows(dest)
    assert [r["line"] for r in rows] == list(range(1, 301))
    assert rows[1]["content"] == "x" * 5000
    assert [r["metadata"] for r in rows[3:6]] == ['{"i":3}', '{"i":4}', '{"i":5}']
    # Appending across a block boundary continues with the right line numbers.
    write_log(root, "2026-02-01", lines([record("y" * 3000, n=400), record("z", n=401)]))
    assert export_parquet(src, dest, block_size=1024).rows == 2
    assert [r["line"] for r in read_rows(dest)][-2:] == [301, 302]


def test_parse_of_a_prefix_equals_parse_of_the_slice() -> None:
    from fsmemory.export._parse import MemoryParser

    data = lines([record(f"r{i}", n=i, metadata={"i": i} if i % 2 else None) for i in range(9)])
    data += b'{"content": "partial'
    cut = data.rfind(b"\n") + 1
    parser = MemoryParser("", "logs/2026-02-01.jsonl")
    whole = parser.parse(data, 1, 0, cut)
    sliced = parser.parse(data[:cut], 1, 0)
    assert whole.fast and sliced.fast
    assert whole.batch.to_pylist() == sliced.batch.to_pylist()
