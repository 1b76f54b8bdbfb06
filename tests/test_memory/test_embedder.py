"""The embedder contract of ``KnowledgeMemory(embedder=...)``: vectors beside the logs on
every backend, batching, clear errors that store nothing, lazy re-embedding when the
embedder changes, snapshots without vectors, and no numeric import without an embedder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from fsmemory import EmbedderError, KnowledgeMemory
from fsmemory.memory import _vecfile
from fsmemory.memory._vecmath import quantize
from fsmemory.snapshot import FsspecBackend
from tests.test_memory.conftest import FakeClock

np = pytest.importorskip("numpy")

SYNONYMS = {"car": "automobile", "cars": "automobile", "vehicle": "automobile"}


VOCABULARY: dict[str, int] = {}


@pytest.fixture(autouse=True)
def fresh_vocabulary() -> Iterator[None]:
    """Each test starts with an empty vocabulary: which words share a bucket never
    depends on the tests that ran before (modules importing this fixture get it too)."""
    VOCABULARY.clear()
    yield
    VOCABULARY.clear()


class WordEmbedder:
    """Deterministic bag of words: each word gets the next bucket the first time any
    instance sees it (so instances agree); synonyms share a bucket."""

    def __init__(self, name: str = "words", dimension: int = 128, *, extra: int = 0) -> None:
        self.name = name
        self.dimension = dimension
        self.extra = extra
        self.batches: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        out = []
        for text in texts:
            vec = [0.0] * (self.dimension + self.extra)
            for raw in text.lower().replace("?", " ").split():
                word = SYNONYMS.get(raw, raw)
                bucket = VOCABULARY.setdefault(word, len(VOCABULARY))
                vec[bucket % self.dimension] += 1.0
            out.append(vec)
        return out


def vector_rows(data: bytes) -> list[str]:
    """The entry ids of the verified rows of a vector file (its header must hold)."""
    header = _vecfile.read_header(data)
    assert header is not None
    scan = _vecfile.scan_blocks(data, _vecfile.HEADER_SIZE, len(data), header.dimension)
    assert scan.skipped == 0 and scan.end == len(data)
    return [i for block in scan.blocks for i in block.ids]


def files(km: KnowledgeMemory) -> dict[str, bytes]:
    return {i.path: km.root.read_bytes(i.path) for i in km.root.list("", recursive=True)}


def test_vectors_live_beside_the_logs_and_are_reused(
    make_km: Callable[..., KnowledgeMemory],
) -> None:
    first = WordEmbedder()
    km = make_km(embedder=first)
    ids = [km.remember(f"note {i} about apples") for i in range(3)]
    pid = km.remember("a persistent fact", persistent=True, category="facts")
    assert [len(b) for b in first.batches] == [1, 1, 1, 1]
    stored = files(km)
    vector_files = [p for p in stored if p.startswith("vectors/")]
    assert vector_files == ["vectors/words-128.i8v"]
    assert vector_rows(stored["vectors/words-128.i8v"]) == [*ids, pid]
    for path, data in stored.items():
        if not path.startswith("vectors/"):
            assert b"FSVB" not in data, path
    # A second instance reads the stored vectors: only the query is embedded.
    again = WordEmbedder()
    reader = make_km(embedder=again)
    assert {e.id for e in reader.recall("apples", limit=3)} == set(ids)
    assert reader.recall("persistent fact")[0].id == pid
    assert [len(b) for b in again.batches] == [1, 1]


def test_the_embedder_finds_what_words_miss(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder())
    target = km.remember("booked the automobile for repair")
    km.remember("booked a table for dinner")
    km.remember("dinner was lovely")
    assert km.recall("when is the car fixed", limit=1)[0].id == target
    # Without the embedder there is no word in common.
    assert KnowledgeMemory(tmp_path / "m").recall("when is the car fixed") == []


def test_missing_vectors_are_embedded_in_batches_and_a_new_embedder_never_mixes(
    tmp_path: Path,
) -> None:
    plain = KnowledgeMemory(tmp_path / "m")
    ids = [plain.remember(f"entry number {i} about pears") for i in range(70)]
    first = WordEmbedder()
    km = KnowledgeMemory(tmp_path / "m", embedder=first)
    assert km.recall("number 5 pears", limit=1)[0].id == ids[5]
    assert sorted(len(b) for b in first.batches) == [1, 6, 64]
    # Another model: its own file, everything embedded again once, lazily.
    other = WordEmbedder(name="other", dimension=8)
    km2 = KnowledgeMemory(tmp_path / "m", embedder=other)
    assert not other.batches
    km2.recall("pears")
    km2.recall("pears again")
    assert sorted(len(b) for b in other.batches) == [1, 1, 6, 64]
    names = sorted(p.name for p in (tmp_path / "m" / "vectors").iterdir())
    assert names == ["other-8.i8v", "words-128.i8v"]
    assert len(vector_rows((tmp_path / "m" / "vectors" / "words-128.i8v").read_bytes())) == 70


def test_vectors_are_never_needed_and_rebuilt_when_deleted(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder())
    kept = km.remember("plums are ripe")
    vectors = tmp_path / "m" / "vectors" / "words-128.i8v"
    vectors.write_bytes(b"not json\n" + vectors.read_bytes()[:10])
    assert KnowledgeMemory(tmp_path / "m").recall("plums")[0].id == kept
    rebuilt = WordEmbedder()
    assert KnowledgeMemory(tmp_path / "m", embedder=rebuilt).recall("plums")[0].id == kept
    assert sorted(len(b) for b in rebuilt.batches) == [1, 1]
    assert vector_rows(vectors.read_bytes()) == [kept]  # written again, whole


def broken(texts: Sequence[str]) -> list[list[float]]:
    raise RuntimeError("embedding service down")


@pytest.mark.parametrize(
    "bad",
    [
        broken,
        WordEmbedder(extra=1),
        lambda texts: [[1.0] * 128] * (len(texts) + 1),
        lambda texts: [["x"] * 128],
    ],
    ids=["raises", "wrong-dimension", "wrong-count", "not-numbers"],
)
def test_a_bad_embedder_gives_a_clear_error_and_stores_nothing(
    make_km: Callable[..., KnowledgeMemory], bad: object
) -> None:
    km = make_km(embedder=WordEmbedder())
    km.remember("kept entry")
    km.remember("kept fact", persistent=True)
    before = files(km)
    failing = make_km(embedder=bad)
    with pytest.raises(EmbedderError, match="embedder"):
        failing.remember("never stored two words")
    with pytest.raises(EmbedderError):
        failing.remember("never stored fact", persistent=True)
    assert files(km) == before
    assert {e.content for e in make_km().recall("", limit=5)} == {"kept entry", "kept fact"}


def test_snapshots_carry_vectors_beside_the_files(tmp_path: Path) -> None:
    from fsmemory.memory._delta import fold_state

    backend = FsspecBackend(str(tmp_path / "snap" / "memory.snapshot"))
    km = KnowledgeMemory(tmp_path / "a", backend=backend, embedder=WordEmbedder())
    entry = km.remember("figs in autumn")
    assert (tmp_path / "a" / "vectors" / "words-128.i8v").exists()
    # never among the snapshot's files: derived parts beside them
    assert not [p for p in fold_state(backend.load_state()) if p.startswith("vectors")]
    restored = KnowledgeMemory(
        tmp_path / "b", backend=FsspecBackend(str(tmp_path / "snap" / "memory.snapshot"))
    )
    assert restored.recall("figs")[0].id == entry
    installed = (tmp_path / "b" / "vectors" / "words-128.i8v").read_bytes()
    assert vector_rows(installed) == [entry]


def test_no_numeric_library_without_an_embedder(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from fsmemory import KnowledgeMemory\n"
        f"km = KnowledgeMemory({str(tmp_path / 'm')!r})\n"
        "km.remember('painted a sunrise')\n"
        "assert km.recall('paint')\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_two_writers_share_vectors_and_a_torn_block_is_skipped(tmp_path: Path) -> None:
    e1, e2 = WordEmbedder(), WordEmbedder()
    km1 = KnowledgeMemory(tmp_path / "m", embedder=e1)
    km2 = KnowledgeMemory(tmp_path / "m", embedder=e2)
    a = km1.remember("alpha apricot orchard")
    b = km2.remember("beta blueberry bush")
    assert km1.recall("blueberry bush", limit=1)[0].id == b
    assert km2.recall("apricot orchard", limit=1)[0].id == a
    # Each text was embedded once, by its writer; the other read the vector from the file.
    assert e1.batches == [["alpha apricot orchard"], ["blueberry bush"]]
    assert e2.batches == [["beta blueberry bush"], ["apricot orchard"]]
    # A crash mid-append leaves a torn last block: it is skipped, the next append is
    # whole.
    path = tmp_path / "m" / "vectors" / "words-128.i8v"
    torn = _vecfile.encode_block(["torn"], ["0" * 16], quantize(np, np.zeros((1, 128))))
    with path.open("ab") as f:
        f.write(torn[:-7])
    c = km1.remember("gamma grape vine")
    e3 = WordEmbedder()
    fresh = KnowledgeMemory(tmp_path / "m", embedder=e3)
    assert fresh.recall("grape vine", limit=1)[0].id == c
    assert e3.batches == [["grape vine"]]


def test_hybrid_recall_keeps_the_forgotten_expired_and_category_rules(tmp_path: Path) -> None:
    clock = FakeClock()
    km = KnowledgeMemory(tmp_path / "m", clock=clock, embedder=WordEmbedder("rules"))
    gone = km.remember("python tips one", category="tech")
    brief = km.remember("python tips two", category="tech", ttl_days=1)
    other = km.remember("python tips three", category="misc")
    km.remember("the automobile needs new tyres", category="tech")
    km.forget(gone)
    clock.advance(days=2)
    found = [e.id for e in km.recall("python tips", limit=10)]
    assert found[0] == other
    assert gone not in found
    assert brief not in found
    assert other not in [e.id for e in km.recall("python tips", category="tech", limit=10)]


def test_an_exact_text_match_ranks_first_with_an_embedder(tmp_path: Path) -> None:
    km = KnowledgeMemory(tmp_path / "m", embedder=WordEmbedder("exact"))
    texts = [f"note {i} about the garden and the shed" for i in range(30)]
    ids = [km.remember(t) for t in texts]
    for i in (0, 7, 29):
        assert km.recall(texts[i], limit=3)[0].id == ids[i]
