"""The persisted index (``.fsmemory-cache.index``) is a cache and nothing more.

Every test compares a fresh instance that loads the cache with a fresh instance that
never reads it (``index_cache=False``): recall results, entries, facts, context and
stats must be equal, whatever happened to the files or to the cache file itself.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from array import array
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import xxhash

from fsmemory import KnowledgeMemory, open_root
from fsmemory.errors import InvalidPathError
from fsmemory.fs.base import CacheData
from fsmemory.fs.paths import cache_paths, validate_path
from fsmemory.memory import _index_cache
from fsmemory.memory._index import MemoryIndex, _Strings
from fsmemory.memory._rank import BM25Index, top_accepted

from .conftest import FakeClock, backend_location
from .test_request_counts import CACHE_WITH_LISTING, REMOTE

Make = Callable[..., KnowledgeMemory]

WORDS = [
    "tea",
    "coffee",
    "lisbon",
    "python",
    "rust",
    "deploy",
    "invoice",
    "guitar",
    "painting",
    "sunrise",
    "alice",
    "bob",
]
QUERIES = ["python deploy", "alice painting", "tea", "sunrise guitar lisbon", "", "bob invoice"]


def _seed(
    km: KnowledgeMemory, n: int = 600, seed: int = 3, clock: FakeClock | None = None
) -> list[str]:
    """Enough entries (about 150 KiB) for the cache to be used; with ``clock``, one
    millisecond apart (entries written at the same microsecond have no defined order
    among themselves in ``entries()``)."""
    rng = random.Random(seed)
    ids = []
    for i in range(n):
        if clock is not None:
            clock.advance(milliseconds=1)
        text = " ".join(rng.choice(WORDS) for _ in range(8)) + f" #{i} " + "x" * 200
        ids.append(
            km.remember(
                text,
                category=rng.choice(["work", "home", "prefs"]),
                importance=rng.choice([0.2, 0.5, 0.9]),
                persistent=i % 7 == 0,
                ttl_days=3 if i % 50 == 1 else None,
                metadata={"n": i} if i % 40 == 3 else None,
            )
        )
    return ids


def _answers(km: KnowledgeMemory) -> tuple[Any, ...]:
    return (
        [[e.id for e in km.recall(q, limit=8)] for q in QUERIES],
        [[e.id for e in km.recall(q, limit=3, category="home")] for q in QUERIES],
        [e.to_dict() for e in km.entries()],
        km.get_persistent_facts(),
        km.build_context(),
        km.stats(),
    )


def _same(make: Make) -> KnowledgeMemory:
    """A fresh cached instance answers exactly as a fresh uncached one."""
    cached = make()
    got = _answers(cached)
    assert got == _answers(make(index_cache=False))
    return cached


def _cache(km: KnowledgeMemory) -> bytes | None:
    data = km.root.read_cache(_index_cache.CACHE_NAME)  # (mapped on a local folder)
    return None if data is None else bytes(data)


def test_the_cache_is_written_loaded_and_hidden(make_km: Make) -> None:
    km = make_km()
    _seed(km)
    assert _cache(km) is None  # written by a search, not by writes
    km.recall("tea")
    assert _cache(km) is not None
    fresh = _same(make_km)
    assert fresh._cache_loaded
    names = [i.path for i in km.root.list("", recursive=True)]
    assert not any(".fsmemory" in name for name in names)


def test_changes_after_the_cache_are_seen(make_km: Make, clock: FakeClock) -> None:
    km = make_km()
    ids = _seed(km, clock=clock)
    km.recall("tea")
    other = make_km(index_cache=False)
    other.remember("alice painted a sunrise in lisbon", category="home", importance=0.9)
    other.remember("bob prefers green tea", category="prefs", persistent=True)
    other.forget(ids[5])
    other.forget(ids[7])  # a persistent one: its bullet goes too
    # A person edits MEMORY.md: one bullet removed, one added.
    md = km.root.read_bytes("MEMORY.md")
    first = next(line for line in md.split(b"\n") if line.startswith(b"- "))
    md = md.replace(first + b"\n", b"", 1) + b"- hand-written fact about rust\n"
    km.root.write("MEMORY.md", md)
    clock.advance(days=4)  # the ttl_days=3 entries expire
    _same(make_km)


@pytest.mark.parametrize("writer_caches", [False, True])
def test_facts_appended_to_memory_md_after_the_cache_count_once(
    make_km: Make, clock: FakeClock, writer_caches: bool
) -> None:
    # MEMORY.md only grew: an index loaded from the cache reads the appended bullets
    # alone (or appends them itself) and must count each once, not again when it first
    # builds its counts; nor may a cache it writes then carry a wrong count.
    km = make_km()
    _seed(km, clock=clock)
    km.recall("tea")
    md = km.root.read_bytes("MEMORY.md")
    last = md.rsplit(b"\n## ", 1)[1].split(b"\n", 1)[0].decode()  # appends go to its end
    writer = make_km(index_cache=writer_caches)
    for i in range(12):
        clock.advance(milliseconds=1)
        writer.remember(f"appended fact {i} about tea", category=last, persistent=True)
    assert km.root.read_bytes("MEMORY.md").startswith(md)  # MEMORY.md only grew
    if not writer_caches:
        assert not writer._cache_loaded
    assert _answers(writer) == _answers(make_km(index_cache=False))
    cached = _same(make_km)  # its recall() rewrites the cache (12 new rows are too few)
    assert cached._cache_loaded
    assert len(cached.entries()) == 600 + 12
    writer.recall("tea")
    _same(make_km)


def test_a_log_rewritten_in_place_is_read_again(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock)
    _seed(km, clock=clock)
    km.recall("tea")
    log = next((folder / "logs").iterdir())
    data = log.read_bytes()
    assert b"python" in data
    # Same inode, same size, a word changed in an old line (not an append).
    with open(log, "r+b") as handle:
        handle.write(data.replace(b"python", b"pythom"))
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 1_000_000))
    fresh = KnowledgeMemory(folder, clock=clock)
    uncached = KnowledgeMemory(folder, clock=clock, index_cache=False)
    assert _answers(fresh) == _answers(uncached)
    assert "pythom" in " ".join(e.content for e in fresh.entries())


def test_deleting_the_cache_changes_no_answer(make_km: Make) -> None:
    km = make_km()
    _seed(km)
    km.recall("tea")
    before = _answers(make_km())
    assert km.root.delete_cache(_index_cache.CACHE_NAME)
    assert _cache(km) is None
    assert _answers(make_km()) == before


def _rebuilt(meta: dict[str, Any], blobs: dict[str, Any]) -> bytes:
    # Consistent framing and checksum: only the content is hostile.
    parts = [(k, bytes(v)) for k, v in blobs.items()]
    body = orjson.dumps(meta)
    rest = body + b"".join(v for _, v in parts)
    head = {
        "version": _index_cache.VERSION,
        "byteorder": sys.byteorder,
        "meta": len(body),
        "blobs": [[k, len(v)] for k, v in parts],
        "xxh3": xxhash.xxh3_64_intdigest(rest),
    }
    return b"".join([_index_cache.MAGIC, orjson.dumps(head), b"\n", rest])


def _damaged(data: bytes) -> list[bytes]:
    meta, blobs = _index_cache.decode(data)
    header_end = data.index(b"\n", len(_index_cache.MAGIC)) + 1

    rebuilt = _rebuilt
    assert _index_cache.decode(rebuilt(meta, blobs))[0] == meta  # the helper is faithful
    short_ids = dict(blobs, ids_off=bytes(blobs["ids_off"])[:-12])
    ids_past_end = dict(blobs, ids_off=bytes(blobs["ids_off"])[:-4] + b"\xff\xff\xff\x00")
    bad_rows = dict(blobs, bm25_rows=b"\xff" * len(blobs["bm25_rows"]))
    short_terms = dict(blobs, bm25_offsets=bytes(blobs["bm25_offsets"])[:-8])
    bad_claim = dict(blobs, claimed=b"\xff\xff\xff\x7f" + bytes(blobs["claimed"])[4:])
    bad_claim_texts = dict(blobs, claimed_other=b"[1,")
    claim_text_past_end = dict(blobs, claimed_other=b'[[100000, "x"]]')
    bad_cursor = dict(meta, logs=[["../../etc/passwd", 1, None, "t", 0, "", True]])
    # MEMORY.md's bullets: the row numbers a plain list, so that only the sections vary.
    plain_refs = dict(
        meta,
        encoded={
            **meta["encoded"],
            "runs": [name for name in meta["encoded"]["runs"] if name != "md_refs"],
            "bits": {k: v for k, v in meta["encoded"]["bits"].items() if k != "md_refs"},
        },
    )

    def md(sections: bytes, refs: list[int]) -> bytes:
        return rebuilt(
            plain_refs, dict(blobs, md_sections=sections, md_refs=array("I", refs).tobytes())
        )

    bad_md = [
        md(b"[[1, 1, [], [], null]]", [2]),  # a category not a string
        md(b'[["work", 1, [], [], null]]', [10000000]),  # a row out of range
        md(b'[["work", 1, ["x"], [0], ["not a time"]]]', []),
        md(b'[["work", 2, ["x"], [2], null]]', [3]),  # a place past the bullets
        md(b'[["work", 2, ["x", "y"], [0, 0], null]]', []),  # one place twice
        md(b'[["work", 2, [], [], null]]', [3]),  # fewer row numbers than bullets need
        md(b'[["work", 1, [], [], null]]', [3, 4]),  # more
        md(b'[["work", -1, [], [], null], ["home", 2, [], [], null]]', [3]),  # less than none
        md(b'[["work", 1, [3], [0], null]]', []),  # a text not a string
    ]
    # Row lists kept as (first, count) runs, and columns rebuilt on load.
    assert "tl_row" in meta["encoded"]["runs"]
    n = len(bytes(blobs["ids_off"])) // 4 - 1
    runs = [array("I", pair).tobytes() for pair in ([0, n + 1], [n, 1], [0, 0], [0])]
    bad_runs = [rebuilt(meta, dict(blobs, tl_row=r)) for r in runs]
    as_runs = dict(meta, encoded={**meta["encoded"], "runs": ["tl_row", "claimed"]})
    bad_fills = [
        dict(meta, encoded={**meta["encoded"], "expires": fill}) for fill in ("x", 2**63, 1.5)
    ]
    no_stamps = dict(meta, encoded={**meta["encoded"], "tl_stamp": False})
    return [
        *bad_runs,
        rebuilt(as_runs, blobs),  # a plain list read as runs
        *(rebuilt(m, {k: v for k, v in blobs.items() if k != "expires"}) for m in bad_fills),
        rebuilt(no_stamps, blobs),  # the column it needs is not there
        rebuilt({k: v for k, v in meta.items() if k != "encoded"}, blobs),
        b"",
        b"\x00" * 100,
        os.urandom(5000),
        data[: len(data) // 2],
        data + b"tail",
        data[:header_end] + b"[" + data[header_end + 1 :],
        data.replace(b'"version":%d' % _index_cache.VERSION, b'"version":99', 1),
        data[:-10] + bytes(b ^ 1 for b in data[-10:]),  # damaged bytes, same length
        rebuilt(meta, short_ids),
        rebuilt(meta, ids_past_end),
        rebuilt(meta, bad_rows),  # found when a search first reads the postings
        rebuilt(meta, short_terms),
        rebuilt(meta, bad_claim),
        rebuilt(meta, bad_claim_texts),
        rebuilt(meta, claim_text_past_end),
        rebuilt(bad_cursor, blobs),
        *bad_md,
        rebuilt({"ids": "not a list"}, {}),
    ]


def _cached_folder(tmp_path: Path, clock: FakeClock) -> tuple[Path, KnowledgeMemory, bytes]:
    """A seeded folder, an instance on it, and the cache file its search wrote."""
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, clock=clock)
    _seed(km, clock=clock)
    km.recall("tea")
    good = _cache(km)
    assert good is not None
    return folder, km, good


def test_a_damaged_or_hostile_cache_is_ignored(tmp_path: Path, clock: FakeClock) -> None:
    folder, km, good = _cached_folder(tmp_path, clock)
    expected = _answers(KnowledgeMemory(folder, clock=clock, index_cache=False))
    for bad in _damaged(good):
        km.root.write_cache(_index_cache.CACHE_NAME, bad)
        fresh = KnowledgeMemory(folder, clock=clock)
        assert _answers(fresh) == expected
        assert not fresh._cache_loaded, bad[:80]
    # The last fresh instance indexed everything and wrote a good cache again.
    assert _cache(km) is not None and _cache(km) != bad


def test_index_cache_false_never_writes(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m", index_cache=False)
    _seed(km)
    km.recall("tea")
    assert _cache(km) is None
    assert not any(p.name.startswith(".fsmemory-cache") for p in (tmp_path / "m").iterdir())


def test_small_memories_use_no_cache(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m")
    _seed(km, n=300)  # rows enough, bytes not
    km.root.delete_cache(_index_cache.CACHE_NAME)
    small = KnowledgeMemory(tmp_path / "s")
    for i in range(300):
        small.remember(f"short note {i}")
    small.recall("note")
    assert _cache(small) is None


def test_cache_names_stay_reserved_for_callers(tmp_path: Path) -> None:
    name = ".fsmemory-cache.index"
    with pytest.raises(InvalidPathError):
        validate_path(name)
    with cache_paths():
        assert validate_path(name) == name
        with pytest.raises(InvalidPathError):
            validate_path(f"logs/{name}")
        with pytest.raises(InvalidPathError):
            validate_path(".fsmemory.lock")
    root = open_root(tmp_path / "r")
    with pytest.raises(InvalidPathError):
        root.read_bytes(name)
    with pytest.raises(InvalidPathError):
        root.write(name, b"x")
    with pytest.raises(ValueError):
        root.read_cache("../index")
    from fsmemory.store import DiskKnowledgeStore, SyncKnowledgeStore

    root.write_cache("index", b"secret")
    store = SyncKnowledgeStore(DiskKnowledgeStore(str(tmp_path / "r")))
    with pytest.raises(InvalidPathError):
        store.read("/" + name)
    assert store.list("/") == []


def test_snapshots_never_carry_the_cache(tmp_path: Path) -> None:
    from fsmemory.snapshot import FsspecBackend

    bucket = f"memory://snap-{os.getpid()}-{random.randrange(1 << 30)}"
    url = f"{bucket}/user"
    km = KnowledgeMemory(tmp_path / "a", backend=FsspecBackend(url))
    _seed(km, n=400)
    km.recall("tea")
    assert _cache(km) is not None
    km.flush()
    store = open_root(bucket)
    assert store.list("", recursive=True)
    for info in store.list("", recursive=True):
        assert b"fsmemory-cache" not in store.read_bytes(info.path)
    restored = KnowledgeMemory(tmp_path / "b", backend=FsspecBackend(url))
    assert _cache(restored) is None
    assert [e.id for e in restored.recall("tea")] == [e.id for e in km.recall("tea")]


def test_processes_writing_and_caching_at_once_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    _seed(KnowledgeMemory(folder), n=500)
    code = (
        "import sys\nfrom fsmemory import KnowledgeMemory\n"
        "km = KnowledgeMemory(sys.argv[1])\n"
        "for i in range(300):\n"
        "    km.remember(f'worker {sys.argv[2]} fact {i} ' + 'y' * 100)\n"
        "    if i % 60 == 0:\n"
        "        km.recall('worker fact')\n"
        "km.recall('fact')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(folder), str(n)]) for n in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    fresh = KnowledgeMemory(folder)
    uncached = KnowledgeMemory(folder, index_cache=False)
    assert _answers(fresh) == _answers(uncached)
    contents = {e.content for e in fresh.entries()}
    assert all(
        f"worker {n} fact {i} " + "y" * 100 in contents for n in range(3) for i in range(300)
    )


def _prio(key: int) -> tuple[float]:
    return (float(key % 3),)


def random_bm25(
    rng: random.Random, vocab: list[str], steps: int, keys: int, b: float = 0.0
) -> tuple[BM25Index, set[int]]:
    """An index after ``steps`` random adds (a key added again replaces its document)
    and removes of keys below ``keys``, and its live keys."""
    index = BM25Index(b=b)
    live: set[int] = set()
    for _step in range(steps):
        key = rng.randrange(keys)
        if key in live and rng.random() < 0.4:
            index.remove(key)
            live.discard(key)
        else:
            index.add(key, [rng.choice(vocab) for _ in range(rng.randint(1, 8))])
            live.add(key)
    return index, live


def test_bm25_state_round_trip_on_random_corpora() -> None:
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(15)]
    for _trial in range(30):
        index, live = random_bm25(rng, vocab, rng.randint(20, 200), 150)
        meta, blobs = index.state()
        copy = BM25Index.from_state(orjson.loads(orjson.dumps(meta)), blobs)
        assert len(copy) == len(index) == len(live)
        for _ in range(5):
            query = {w: rng.choice([1.0, 2.0]) for w in rng.sample(vocab, 3)}
            first, second = rng.sample(sorted(query), 2)
            pairs = {(first, second)}
            assert copy.scores(query, pairs) == index.scores(query, pairs)
            assert copy.search(query, 4, bool, _prio, pairs) == top_accepted(
                index.scores(query, pairs), 4, bool, _prio
            )
        # Both keep working the same after more changes.
        for key in rng.sample(sorted(live), min(5, len(live))):
            index.remove(key)
            copy.remove(key)
        index.add(500, ["w1", "w2", "w1"])
        copy.add(500, ["w1", "w2", "w1"])
        assert copy.scores({"w1": 1.0, "w2": 1.0}) == index.scores({"w1": 1.0, "w2": 1.0})


@pytest.mark.parametrize("backend", REMOTE)
def test_a_cached_cold_open_is_a_listing_and_one_get(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    from fsmemory.testing.requests import count_requests

    source = KnowledgeMemory(tmp_path / "src")
    _seed(source, n=500)
    url, options = backend_location(request, backend, tmp_path)
    root = open_root(url, options)
    for info in source.root.list("", recursive=True):
        root.write(info.path, source.root.read_bytes(info.path))
    KnowledgeMemory(url, storage_options=options).recall("tea")  # writes the cache
    fresh = KnowledgeMemory(url, storage_options=options)
    with count_requests(fresh.root) as c:
        found = fresh.recall("python deploy")
    assert fresh._cache_loaded
    listing = 2 if backend == "redis" else 1
    assert len(c) == listing + 1, c.calls
    assert [e.id for e in found] == [
        e.id
        for e in KnowledgeMemory(url, storage_options=options, index_cache=False).recall(
            "python deploy"
        )
    ]


@pytest.mark.parametrize("backend", REMOTE)
def test_a_cached_cold_open_sends_the_cache_get_with_the_listing(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    """On S3 and GCS (obstore) both requests are sent together (one round trip), not
    through the sequential cache read; elsewhere the cache is read after the listing.
    Either way: a listing and one GET."""
    url, options = backend_location(request, backend, tmp_path)
    _seed(KnowledgeMemory(url, storage_options=options), n=500)
    KnowledgeMemory(url, storage_options=options).recall("tea")
    fresh = KnowledgeMemory(url, storage_options=options)
    events: list[str] = []
    original = fresh.root.read_cache

    def read_cache(name: str) -> CacheData | None:  # the sequential path's cache read
        events.append("read cache")
        return original(name)

    fresh.root.read_cache = read_cache  # type: ignore[method-assign]
    observers = getattr(fresh.root, "observers", None)
    if isinstance(observers, list):  # obstore: every call it makes
        observers.append(lambda operation, key: events.append(f"{operation} {key}"))
    fresh.recall("python deploy")
    assert fresh._cache_loaded
    if backend in CACHE_WITH_LISTING:  # sent together (test_s3_routes.py sees the pair)
        assert sorted(e.split()[0] for e in events) == ["get", "list"], events
        assert any(e.endswith("/.fsmemory-cache.index") for e in events), events
    else:
        assert events == ["read cache"]


def _others_write(url: str, options: dict[str, Any], clock: FakeClock, new_day: bool) -> None:
    """Another process appends (on a new day: to a new log), adds a persistent fact,
    and rewrites the cache file."""
    other = KnowledgeMemory(url, storage_options=options, clock=clock)
    if new_day:
        clock.advance(days=1)
    for i in range(_index_cache.MIN_NEW_ROWS + 10):
        clock.advance(milliseconds=1)
        other.remember(f"later note {i} on python and tea", persistent=i % 90 == 0)
    other.recall("tea")  # enough new rows: the cache is written again
    assert other._cache_rows == other._index.rows


#: Four days of logs by backend, as remember() wrote them there, and how far the clock
#: moved meanwhile: see :func:`_four_days_of_logs`.
FourDays = dict[str, tuple[dict[str, bytes], timedelta]]


@pytest.fixture(scope="module")
def four_days() -> FourDays:
    """The files of :func:`_four_days_of_logs`, kept for the module's next tests."""
    return {}


def _four_days_of_logs(
    make_km: Make,
    location: tuple[str, dict[str, Any]],
    backend: str,
    clock: FakeClock,
    four_days: FourDays,
) -> None:
    """Four daily logs of 160 entries each on the fresh root, written by remember() on
    the backend the first time; on later calls with the same backend the files it
    wrote then are copied in byte for byte, and the clock moves on as far as it did
    (640 appends are most of a test's time on an object store)."""
    root = open_root(*location)
    kept = four_days.get(backend)
    if kept is not None:
        files, elapsed = kept
        for path, data in files.items():
            root.write(path, data)
        clock.now += elapsed
        return
    start = clock.now
    writer = make_km()
    for day in range(4):  # four logs: the other process's appends make one stale
        if day:
            clock.advance(days=1)
        _seed(writer, n=160, seed=day, clock=clock)
    files = {info.path: root.read_bytes(info.path) for info in root.list("", recursive=True)}
    assert sum(path.endswith(".jsonl") for path in files) == 4, sorted(files)
    four_days[backend] = (files, clock.now - start)


@pytest.mark.parametrize("new_day", [False, True])
@pytest.mark.parametrize("cache_first", [True, False])
def test_a_cache_written_between_the_listing_and_its_read_changes_no_answer(
    make_km: Make,
    location: tuple[str, dict[str, Any]],
    backend: str,
    clock: FakeClock,
    four_days: FourDays,
    cache_first: bool,
    new_day: bool,
) -> None:
    """The listing and the cache file may be answered in either order (on S3 they
    travel together): another process that appends and rewrites the cache between the
    two changes no answer. A cache older than the listing is the usual stale cache; a
    cache newer than the listing describes files the listing shows shorter, which are
    read again (and a log the listing does not show yet is left for the next call)."""
    url, options = location
    _four_days_of_logs(make_km, location, backend, clock, four_days)
    make_km().recall("tea")
    fresh = make_km()
    root = fresh.root
    used: list[list[Any]] = []

    def reordered(
        name: str, load: Callable[[CacheData], Any], want: Any = None
    ) -> tuple[list[Any], Any]:
        if cache_first:
            data = root.read_cache(name)
            _others_write(url, options, clock, new_day)
            listing = root.list("", recursive=True)
        else:
            listing = root.list("", recursive=True)
            _others_write(url, options, clock, new_day)
            data = root.read_cache(name)
        assert data is not None
        used.append(listing)
        return listing, load(data)

    root.list_with_cache = reordered  # type: ignore[method-assign]
    first = [e.id for e in fresh.recall("python tea", limit=8)]
    assert len(used) == 1
    assert fresh._cache_loaded  # kept: a quarter of the bytes at most are read again
    # An uncached reader given the same listing reads the same files after it.
    twin = make_km(index_cache=False)
    listings = iter(used)
    twin_list = twin.root.list

    def listed_first(prefix: str = "", *, recursive: bool = False) -> list[Any]:
        return next(listings, None) or twin_list(prefix, recursive=recursive)

    twin.root.list = listed_first  # type: ignore[method-assign]
    assert first == [e.id for e in twin.recall("python tea", limit=8)]
    uncached = make_km(index_cache=False)
    if cache_first or not new_day:
        # The listing is as new as everything written: the whole answer.
        assert first == [e.id for e in uncached.recall("python tea", limit=8)]
    assert _answers(fresh) == _answers(uncached)
    assert _answers(make_km()) == _answers(uncached)


def test_row_lists_round_trip_as_runs_bits_or_plain() -> None:
    """The cache's row lists: whichever form is stored (runs of consecutive rows, bit
    sets of ascending stretches, or plain), a load gives back exactly the rows, in order, duplicates and all."""
    from fsmemory.memory._rowlists import bits_of as _bits_of
    from fsmemory.memory._rowlists import listed as _listed
    from fsmemory.memory._rowlists import rows_of as _rows_of
    from fsmemory.memory._rowlists import runs_of as _runs_of

    rng = random.Random(4)
    kinds = {"runs": 0, "bits": 0, "plain": 0}
    for _ in range(400):
        rows = array("I")
        while len(rows) < rng.randint(0, 60):
            start = rng.randrange(200)
            rows.extend(range(start, start + rng.choice([1, 1, 2, 30, 80])))
        if rng.random() < 0.3:  # ascending, gaps: bits when dense enough
            rows = array("I", sorted(rng.sample(range(200), rng.randint(0, 60))))
        runs, bits = _runs_of(rows), None
        stored = rows.tobytes() if runs is None else runs.tobytes()
        if runs is None and (packed := _bits_of(rows)) is not None:
            bits, stored = packed
        kinds["runs" if runs is not None else "bits" if bits is not None else "plain"] += 1
        n = max(rows, default=0) + 1
        assert list(_listed(_rows_of(stored, runs is not None, bits, n))) == list(rows)
        if rows:
            with pytest.raises(ValueError):
                _rows_of(stored, runs is not None, bits, n - 1)
    assert min(kinds.values()) > 20, kinds  # every form was exercised


def test_bm25_add_many_builds_what_add_builds() -> None:
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(10)]
    docs = [(key, [rng.choice(vocab) for _ in range(rng.randint(0, 9))]) for key in range(300)]
    one, many = BM25Index(), BM25Index()
    for key, terms in docs:
        one.add(key, terms)
    many.add_many(docs)
    assert one.state() == many.state()


def test_a_warm_process_sees_a_log_rewritten_in_place(tmp_path: Path) -> None:
    """The same rule without any cache file: a log that changed without growing is read
    again by a process that had already indexed it."""
    folder = tmp_path / "m"
    km = KnowledgeMemory(folder, index_cache=False)
    km.remember("the python deploy went fine")
    assert [e.content for e in km.recall("python")] == ["the python deploy went fine"]
    log = next((folder / "logs").iterdir())
    data = log.read_bytes()
    with open(log, "r+b") as handle:
        handle.write(data.replace(b"python", b"pythom"))
    stat = log.stat()
    os.utime(log, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert km.recall("python") == []
    assert [e.content for e in km.recall("pythom")] == ["the pythom deploy went fine"]


def _seed_varied(km: KnowledgeMemory, clock: FakeClock, n: int = 500) -> list[str]:
    """Entries of every shape the cache stores: non-ASCII text, TTLs, metadata,
    persistent facts, hidden records and MEMORY.md-only facts."""
    ids = _seed(km, n=n, clock=clock)
    for text in (
        "café au lait in Lisbon",
        "東京タワーの夜景",
        "emoji 🎸 guitar night",
        "naïve Straße",
    ):
        clock.advance(milliseconds=1)
        ids.append(km.remember(text, category="intl", persistent=True, ttl_days=9))
    md = km.root.read_bytes("MEMORY.md")
    first = next(line for line in md.split(b"\n") if line.startswith(b"- "))
    # One bullet removed (its record is hidden), one hand-written (an md- entry).
    km.root.write("MEMORY.md", md.replace(first + b"\n", b"", 1) + b"- hand-written rust note\n")
    return ids


def test_a_loaded_index_states_exactly_what_it_loaded(tmp_path: Path, clock: FakeClock) -> None:
    km = KnowledgeMemory(tmp_path / "m", clock=clock)
    _seed_varied(km, clock)
    km.recall("tea")  # builds the ranker (and writes the cache)
    index = km._index
    data = _index_cache.encode(index)
    assert data is not None
    loaded = MemoryIndex()
    loaded.load_state(*_index_cache.decode(data))
    assert loaded._unbuilt()  # nothing but the search columns built yet
    # Building every lazy part gives back the very same state, byte for byte.
    assert _index_cache.encode(loaded) == data
    # ... and every lazy field equals the one built from the files.
    for name in ("_row_of", "_file_rows", "_claimed", "_n_claimed", "_fact_counts"):
        assert getattr(loaded, name) == getattr(index, name), name
    assert loaded.document.sections == index.document.sections
    assert not loaded._unbuilt()


@pytest.mark.parametrize(
    "first",
    ["recall", "remember", "forget", "get", "context", "facts", "entries", "stats", "prune"],
)
def test_any_first_call_after_a_cached_load_answers_as_uncached(
    tmp_path: Path, clock: FakeClock, first: str
) -> None:
    folder = tmp_path / "m"
    ids = _seed_varied(KnowledgeMemory(folder, clock=clock), clock)
    KnowledgeMemory(folder, clock=clock).recall("tea")
    assert _cache(KnowledgeMemory(folder, clock=clock)) is not None

    def call(km: KnowledgeMemory) -> Any:
        if first == "recall":
            return [e.id for e in km.recall("guitar café", limit=6)]
        if first == "remember":
            clock.advance(milliseconds=1)  # after the last entry, not at its microsecond
            return km.remember("a new note on tea and rust", persistent=True)
        if first == "forget":
            return km.forget(ids[-1]), km.forget(ids[14])
        if first == "get":
            found = km.get(ids[21])
            return None if found is None else found.to_dict()
        if first == "context":
            return km.build_context()
        if first == "facts":
            return km.get_persistent_facts()
        if first == "entries":
            return [e.to_dict() for e in km.entries()]
        if first == "stats":
            return km.stats()
        return km.prune_logs(max_days=5)

    def undated(answers: tuple[Any, ...]) -> tuple[Any, ...]:
        # A fact only MEMORY.md holds is dated by the file's mtime when an index first
        # reads it, so after a write to MEMORY.md an instance that read it before (from
        # the cache) dates it earlier than one reading it now: leave that date out.
        entries = [
            {k: v for k, v in e.items() if k != "timestamp" or not e["id"].startswith("md-")}
            for e in answers[2]
        ]
        return (*answers[:2], entries, *answers[3:])

    cached = KnowledgeMemory(folder, clock=clock)
    got = call(cached)
    answers = undated(_answers(cached))
    assert cached._cache_loaded  # (a first remember() reads nothing: loaded after it)
    uncached = KnowledgeMemory(folder, clock=clock, index_cache=False)
    if first in ("remember", "forget", "prune"):
        # The write happened once, through the cached instance: compare the reads.
        assert undated(_answers(uncached)) == answers
    else:
        assert call(uncached) == got
        assert undated(_answers(uncached)) == answers


def test_damaged_postings_are_rebuilt_and_the_cache_replaced(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder, km, good = _cached_folder(tmp_path, clock)
    meta, blobs = _index_cache.decode(good)
    blobs = {k: bytes(v) for k, v in blobs.items()}
    blobs["bm25_rows"] = b"\xff" * len(blobs["bm25_rows"])
    index = MemoryIndex()
    index.load_state(meta, blobs)  # lengths fit: the damage shows on first use
    bad = _rebuilt(meta, blobs)
    km.root.write_cache(_index_cache.CACHE_NAME, bad)
    expected = [e.id for e in KnowledgeMemory(folder, clock=clock, index_cache=False).recall("tea")]
    fresh = KnowledgeMemory(folder, clock=clock)
    assert [e.id for e in fresh.recall("tea")] == expected
    assert not fresh._cache_loaded
    replaced = _cache(km)
    assert replaced is not None and replaced != bad
    again = KnowledgeMemory(folder, clock=clock)
    assert [e.id for e in again.recall("tea")] == expected
    assert again._cache_loaded and not again._index.cache_damaged


def test_a_cached_recall_of_known_words_loads_no_stemmer(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    _seed(KnowledgeMemory(folder))
    KnowledgeMemory(folder).recall("tea")
    script = (
        "import sys, json\n"
        "from fsmemory import KnowledgeMemory\n"
        f"km = KnowledgeMemory({str(folder)!r})\n"
        "known = [e.id for e in km.recall('painting deploy', limit=7)]\n"
        "stemmer = 'Stemmer' in sys.modules or 'snowballstemmer' in sys.modules\n"
        "unknown = [e.id for e in km.recall('paintings', limit=7)]\n"
        "print(json.dumps([known, stemmer, unknown, km._cache_loaded]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    known, stemmer, unknown, loaded = orjson.loads(out)
    assert loaded and not stemmer
    plain = KnowledgeMemory(folder, index_cache=False)
    assert known == [e.id for e in plain.recall("painting deploy", limit=7)]
    assert unknown == [e.id for e in plain.recall("paintings", limit=7)]
    assert unknown  # "paintings" is stemmed (not in the stored words) and matches


def test_stored_strings_survive_hostile_offsets() -> None:
    data = "é東🎸x".encode()
    column = _Strings(data, array("I", [0, 2, 5, 9, 10]))
    assert list(column) == ["é", "東", "🎸", "x"] == column.tolist()
    cut = _Strings(data, array("I", [0, 1, 7, 3, 10]))  # not at characters, backwards
    assert all(isinstance(text, str) for text in cut) and len(cut.tolist()) == 4
    with pytest.raises(ValueError):
        _Strings(data, array("I", [0, 4]))  # does not end at the end
    with pytest.raises(ValueError):
        _Strings(data, array("I"))


def test_a_copied_folder_parses_afresh_and_caches_again(tmp_path: Path, clock: FakeClock) -> None:
    """Every file of a copy is another file (new inodes): the copied cache would drop and
    re-read everything it holds, which costs more than parsing, so it is not used."""
    folder, _km, good = _cached_folder(tmp_path, clock)
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert (copy / ".fsmemory-cache.index").read_bytes() == good
    fresh = KnowledgeMemory(copy, clock=clock)
    assert _answers(fresh) == _answers(KnowledgeMemory(copy, clock=clock, index_cache=False))
    assert not fresh._cache_loaded
    assert (copy / ".fsmemory-cache.index").read_bytes() != good  # written anew
    again = KnowledgeMemory(copy, clock=clock)
    assert _answers(again) == _answers(fresh)
    assert again._cache_loaded
