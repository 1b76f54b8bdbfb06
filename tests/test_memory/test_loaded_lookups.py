"""A loaded index finds its terms and stems by bisection in tables stored with them:
every lookup, search and prefix expansion answers as the index it was saved from (and
as a scan of its stored text), also after its vocabulary changes; tables that do not
fit their text are refused."""

from __future__ import annotations

import random
from array import array

import pytest

from fsmemory.memory import _rank
from fsmemory.memory._rank import BM25Index, analyze, query_terms, stem, term_pairs, top_accepted

# Words that are prefixes of others, share stems, repeat, and leave ASCII.
WORDS = [
    "paint", "painted", "painting", "painter", "pain", "plan", "planning", "planned",
    "garden", "gardens", "gardening", "run", "running", "runner", "café", "cafés",
    "naïve", "zürich", "東京", "emoji😀", "x", "xy", "xyz", "deadline", "deadlines",
]  # fmt: skip


def _docs(rng: random.Random, n: int) -> list[str]:
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) + f" name{i}x{i * 7}"
        for i in range(n)
    ]


def _reference_term(text: str, term: str) -> int | None:
    """The id the stored term text gives ``term`` (the whole text scanned)."""
    at = text.find("\n" + term + "\n") if "\n" not in term else -1
    return None if at < 0 else text.count("\n", 0, at)


def _reference_stem(text: str, word: str) -> str:
    at = text.find("\n" + word + "\t") if "\n" not in word and "\t" not in word else -1
    if at < 0:
        return stem(word)
    start = at + len(word) + 2
    return text[start : text.index("\n", start)] or word


def _probes(rng: random.Random, docs: list[str], stored: list[str]) -> list[str]:
    seen = sorted({w for d in docs for w in d.split()})
    made = [*WORDS, *stored, *seen, "nothing", "paintbrush", "", "\n", "a\tb"]
    made += ["\U0010ffff", "zzzzzz", "0", "name1", "name1x"]
    made += [w[:k] for w in rng.sample(seen, 40) for k in (1, 3, 4, 5)]
    rng.shuffle(made)
    return made


def _loaded(built: BM25Index, stems: dict[str, str] | None = None) -> tuple[BM25Index, str, str]:
    """``built`` saved and loaded (with ``stems`` stored in place of its own), and
    the stored term and stem texts."""
    meta, blobs = built.state()
    if stems is not None:
        lines = [f"{w}\t{s}" for w, s in sorted(stems.items())]
        blobs = {
            **blobs,
            "stems": ("\n" + "\n".join(lines) + "\n").encode(),
            "stem_starts": _rank._line_starts(lines, 1).tobytes(),
        }
    loaded = BM25Index.from_state(meta, blobs)
    return loaded, "\n" + bytes(blobs["terms"]).decode() + "\n", bytes(blobs["stems"]).decode()


def test_lookups_answer_as_a_scan_of_the_stored_text(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    docs = _docs(rng, 300)
    built = BM25Index()
    built.add_many((key, analyze(text)) for key, text in enumerate(docs))
    # Stored stems unlike this stemmer's (another version wrote them), words that are
    # their own stem (an empty stem), words that are not terms.
    words = sorted({w for d in docs for w in d.split()} | {"unrelated", "östlich"})
    stems = {w: (f"{w}~{n}" if n % 3 else "") for n, w in enumerate(words)}
    loaded, terms, stem_text = _loaded(built, stems)
    assert loaded._term_table is not None and loaded._stem_table is not None
    # As in a fresh process: no stem found yet, so every word is looked up in the text.
    monkeypatch.setattr(_rank, "_STEM_CACHE", {})
    ids = terms[1:-1].split("\n")
    assert loaded._find_term("\ud800x") is None  # (a lone surrogate is never stored)
    assert loaded._terms_starting("\ud800") == []
    for word in _probes(rng, docs, words):
        want = _reference_term(terms, word)
        assert loaded._find_term(word) == want, word
        if want is not None:
            assert ids[want] == word
        assert loaded.query_stem(word) == _reference_stem(stem_text, word), word
        for size in (1, 2, 4):
            prefix = word[:size]
            found = sorted(t for t in ids if t.startswith(prefix))
            assert loaded._terms_starting(prefix) == found, prefix
            assert loaded._has_prefix(prefix) == bool(found), prefix


def test_searches_answer_as_the_saved_index_and_after_a_change() -> None:
    rng = random.Random(5)
    docs = _docs(rng, 400)
    built = BM25Index()
    built.add_many((key, analyze(text)) for key, text in enumerate(docs))
    loaded = BM25Index.from_state(*built.state())
    queries = [
        "painting garden", "paint", "plann", "deadl", "café zürich", "東京",
        "name7x49", "nothing at all", "qwxz42 vvbnq", "runn", "xy",
    ] + [" ".join(rng.sample(WORDS, 3)) for _ in range(20)]  # fmt: skip

    def accept(_key: int) -> bool:
        return True

    def priority(key: int) -> tuple[int]:
        return (key,)

    def same() -> None:
        for query in queries:
            terms, pairs = query_terms(query), term_pairs(analyze(query))
            want = top_accepted(built.scores(terms, pairs), 10, accept, priority)
            for index in (built, loaded):
                assert index.search(terms, 10, accept, priority, pairs) == want, query

    same()
    # The vocabulary changes: new terms (one a longer form of an old one) and removals.
    for key, text in [(1000, "paintbrushes everywhere"), (1001, "gardenia plannings")]:
        built.add(key, analyze(text))
        loaded.add(key, analyze(text))
    built.remove(3)
    loaded.remove(3)
    queries += ["paintbrush", "gardeni", "planning", "everywhere"]
    same()
    # Saved again and loaded: the tables are written afresh.
    again = BM25Index.from_state(*loaded.state())
    for query in queries:
        terms, pairs = query_terms(query), term_pairs(analyze(query))
        want = top_accepted(built.scores(terms, pairs), 10, accept, priority)
        assert again.search(terms, 10, accept, priority, pairs) == want, query


@pytest.mark.parametrize(
    "change",
    ["order short", "starts short", "starts off", "no table", "odd"],
)
def test_tables_that_do_not_fit_their_text_are_refused(change: str) -> None:
    """(What the cache's checksum passed was written so; these are checked anyway.)"""
    built = BM25Index()
    built.add_many((k, analyze(t)) for k, t in enumerate(["alpha beta", "gamma delta", "beta"]))
    meta, blobs = built.state()
    order = array("I", bytes(blobs["term_order"]))
    starts = array("I", bytes(blobs["term_starts"]))
    if change == "order short":
        blobs = {**blobs, "term_order": order[:-1].tobytes()}
    elif change == "starts short":
        blobs = {**blobs, "term_starts": starts[:-1].tobytes()}
    elif change == "starts off":
        starts[-1] += 1
        blobs = {**blobs, "term_starts": starts.tobytes()}
    elif change == "no table":
        blobs = {k: v for k, v in blobs.items() if k != "stem_starts"}
    else:
        blobs = {**blobs, "term_order": bytes(blobs["term_order"])[:-1]}
    with pytest.raises(ValueError):
        BM25Index.from_state(meta, blobs)


def test_a_table_pointing_outside_its_text_makes_lookups_miss_not_fail() -> None:
    built = BM25Index()
    built.add_many((k, analyze(t)) for k, t in enumerate(["alpha beta", "gamma delta", "beta"]))
    meta, blobs = built.state()
    order = array("I", bytes(blobs["term_order"]))
    order[0] = len(order) + 5
    loaded = BM25Index.from_state(meta, {**blobs, "term_order": order.tobytes()})
    terms = bytes(blobs["terms"]).decode().split("\n")
    for word in ("alpha", "beta", "gamma", "delta", "zeta"):
        found = loaded._find_term(word)  # a miss at worst, never another term's id
        assert found is None or terms[found] == word, word
    assert loaded._terms_starting("a") in ([], ["alpha"])
    assert loaded._find_term("zeta") is None
