"""similarity, is_near_duplicate and NearDuplicateIndex."""

from __future__ import annotations

import difflib
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fsmemory.errors import InvalidInputError
from fsmemory.sanitizers import NearDuplicateIndex, is_near_duplicate, similarity
from fsmemory.sanitizers._similarity import _required, lcs_length


def lcs_table(a: str, b: str) -> int:
    """Textbook O(len(a) * len(b)) LCS, the oracle for the bit-parallel version."""
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def difflib_ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def exact_ratio(a: str, b: str) -> float:
    return 2.0 * lcs_table(a, b) / (len(a) + len(b)) if a or b else 1.0


small_text = st.text(alphabet="abc d", max_size=30)
thresholds = st.sampled_from([0.0, 0.1, 0.5, 0.6, 0.75, 0.8, 0.9, 0.95, 0.99, 1.0]) | st.floats(
    0, 1
)


# --- the metric -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("", "", 1.0),
        ("abc", "abc", 1.0),
        ("", "abc", 0.0),
        ("abc", "xyz", 0.0),
        ("abcd", "acbd", 0.75),  # LCS 3
        ("kitten", "sitting", 2 * 4 / 13),
    ],
)
def test_similarity_values(a: str, b: str, expected: float) -> None:
    assert similarity(a, b) == pytest.approx(expected)
    assert similarity(b, a) == pytest.approx(expected)


@settings(max_examples=400, deadline=None)
@given(small_text, small_text)
def test_lcs_matches_the_dynamic_programming_oracle(a: str, b: str) -> None:
    assert lcs_length(a, b) == lcs_table(a, b)
    assert similarity(a, b) == exact_ratio(a, b)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_lcs_on_arbitrary_unicode(a: str, b: str) -> None:
    assert lcs_length(a, b) == lcs_table(a, b)


@settings(max_examples=600, deadline=None)
@given(small_text, small_text)
def test_never_below_difflib_ratio(a: str, b: str) -> None:
    assert similarity(a, b) >= difflib_ratio(a, b)


@settings(max_examples=600, deadline=None)
@given(small_text, small_text, thresholds)
def test_at_least_as_strict_as_difflib(a: str, b: str, threshold: float) -> None:
    # Whatever difflib would reject as a near-duplicate, we reject too.
    if difflib_ratio(a, b) >= threshold:
        assert is_near_duplicate(a, [b], threshold)
        assert NearDuplicateIndex([b], threshold=threshold).is_near_duplicate(a)


def test_stricter_than_difflib_on_interleaved_text() -> None:
    # difflib only counts contiguous blocks; LCS also counts the interleaved matches.
    a, b = "cdaacbcd", "cbaabccd"
    assert difflib_ratio(a, b) == 0.25
    assert similarity(a, b) == 0.75
    assert is_near_duplicate(a, [b], 0.7)


def test_required_length_is_the_smallest_reaching_the_threshold() -> None:
    for total in range(1, 60):
        for threshold in (0.0, 0.1, 1 / 3, 0.5, 0.9, 0.91, 0.999, 1.0):
            need = _required(total, threshold)
            assert 2.0 * need / total >= threshold
            assert need == 0 or 2.0 * (need - 1) / total < threshold


# --- decisions ------------------------------------------------------------------------


@pytest.mark.parametrize("examples", [200, pytest.param(800, marks=pytest.mark.slow)])
def test_decision_equals_exact_ratio(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(small_text, st.lists(small_text, max_size=4), thresholds)
    def check(text: str, candidates: list[str], threshold: float) -> None:
        expected = any(exact_ratio(text, c) >= threshold for c in candidates)
        assert is_near_duplicate(text, candidates, threshold) == expected
        index = NearDuplicateIndex(candidates, threshold=threshold)
        assert index.is_near_duplicate(text) == expected

    check()


@pytest.mark.parametrize("examples", [40, pytest.param(150, marks=pytest.mark.slow)])
def test_decision_on_longer_edited_texts(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(st.randoms(use_true_random=False), thresholds)
    def check(rnd: random.Random, threshold: float) -> None:
        # Exercises the early-exit checkpoints, which only start after a few rows.
        base = "".join(rnd.choice("abcdefgh ") for _ in range(rnd.randint(40, 160)))
        edited = list(base)
        for _ in range(rnd.randint(0, 30)):
            if edited and rnd.random() < 0.5:
                del edited[rnd.randrange(len(edited))]
            else:
                edited.insert(rnd.randint(0, len(edited)), rnd.choice("abcxyz "))
        other = "".join(edited)
        expected = exact_ratio(base, other) >= threshold
        assert is_near_duplicate(base, [other], threshold) == expected
        assert NearDuplicateIndex([other], threshold=threshold).is_near_duplicate(base) == expected

    check()


def test_exact_near_and_distinct() -> None:
    stored = "The user prefers dark mode in every editor and terminal."
    near = "The user prefers dark mode in every editor and terminal!"
    distinct = "Deploys happen on Tuesdays after the staging sign-off."
    assert is_near_duplicate(stored, [stored])
    assert is_near_duplicate(near, [distinct, stored])
    assert not is_near_duplicate(distinct, [stored])
    assert not is_near_duplicate(near, [])


def test_threshold_zero_matches_any_candidate() -> None:
    assert is_near_duplicate("abc", ["xyz"], 0.0)
    assert is_near_duplicate("", ["xyz"], 0)
    assert not is_near_duplicate("abc", [], 0.0)


def test_threshold_one_matches_identical_text_only() -> None:
    assert is_near_duplicate("abc", ["abc"], 1.0)
    assert is_near_duplicate("", [""], 1.0)
    assert not is_near_duplicate("abc", ["abcd", "ab", "abd"], 1.0)
    assert not is_near_duplicate("a" * 1000, ["a" * 999 + "b"], 1.0)


def test_empty_strings() -> None:
    assert is_near_duplicate("", [""], 0.9)
    assert not is_near_duplicate("", ["a"], 0.9)
    assert not is_near_duplicate("a", [""], 0.9)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf"), "0.9", True, None])
def test_invalid_thresholds(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        is_near_duplicate("a", ["a"], bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        NearDuplicateIndex(threshold=bad)  # type: ignore[arg-type]


def test_word_shuffles_are_not_near_duplicates() -> None:
    rnd = random.Random(3)
    words = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 8)))
        for _ in range(180)
    ]
    base = " ".join(words)
    shuffled = words[:]
    rnd.shuffle(shuffled)
    other = " ".join(shuffled)
    assert sorted(base) == sorted(other)
    assert similarity(base, other) < 0.9
    assert not is_near_duplicate(other, [base], 0.9)


# --- NearDuplicateIndex ---------------------------------------------------------------


def test_index_window_and_exact_membership() -> None:
    index = NearDuplicateIndex(["a1", "b2", "c3"], threshold=0.9, maxlen=2)
    assert list(index) == ["b2", "c3"]
    assert len(index) == 2
    assert "a1" not in index and "c3" in index
    index.add("d4")
    assert list(index) == ["c3", "d4"]
    assert index.maxlen == 2
    assert index.threshold == 0.9
    assert "maxlen=2" in repr(index)


def test_index_find_prefers_exact_then_newest() -> None:
    index = NearDuplicateIndex(["hello world!", "hello world?", "other"], threshold=0.8)
    assert index.find("hello world?") == "hello world?"
    assert index.find("hello world.") == "hello world?"
    assert index.find("hello world.", threshold=1.0) is None
    assert index.find("nothing alike") is None


def test_index_duplicates_discard_and_clear() -> None:
    index = NearDuplicateIndex(["x", "y", "x"])
    assert index.discard("x")
    assert list(index) == ["y", "x"]
    assert "x" in index
    assert index.discard("x")
    assert "x" not in index
    assert not index.discard("x")
    index.clear()
    assert len(index) == 0 and not index.is_near_duplicate("y")


def test_index_eviction_keeps_exact_counts() -> None:
    index = NearDuplicateIndex(["x", "x", "y"], maxlen=2)
    assert list(index) == ["x", "y"]
    assert "x" in index
    index.add("z")
    assert "x" not in index


def test_index_with_zero_maxlen_stores_nothing() -> None:
    index = NearDuplicateIndex(["x"], maxlen=0)
    assert len(index) == 0 and "x" not in index


def test_index_rejects_negative_maxlen() -> None:
    with pytest.raises(InvalidInputError):
        NearDuplicateIndex(maxlen=-1)


@settings(max_examples=100, deadline=None)
@given(st.lists(small_text, max_size=8), st.integers(0, 5), small_text)
def test_index_matches_a_plain_scan_of_its_window(
    texts: list[str], maxlen: int, query: str
) -> None:
    assume(maxlen > 0)
    index = NearDuplicateIndex(texts, threshold=0.7, maxlen=maxlen)
    window = texts[-maxlen:]
    assert list(index) == window
    assert index.is_near_duplicate(query) == is_near_duplicate(query, window, 0.7)


# --- the packed path (many candidates pass the cheap bounds) ---------------------------


def _edits(rnd: random.Random, text: str, count: int) -> str:
    chars = list(text)
    for _ in range(count):
        if chars and rnd.random() < 0.5:
            del chars[rnd.randrange(len(chars))]
        else:
            chars.insert(rnd.randint(0, len(chars)), rnd.choice("abcd "))
    return "".join(chars)


# Each example runs the quadratic oracle on up to 40 candidates (about 0.15 s): the
# default run checks 25 examples, ``-m slow`` 150.
@pytest.mark.parametrize("examples", [25, pytest.param(150, marks=pytest.mark.slow)])
def test_packed_decisions_equal_exact_ratio(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(
        st.randoms(use_true_random=False),
        st.sampled_from([0.7, 0.8, 0.9, 0.95]) | st.floats(0.5, 1),
        st.integers(12, 40),
    )
    def check(rnd: random.Random, threshold: float, count: int) -> None:
        base = "".join(rnd.choice("abcd ") for _ in range(rnd.randint(30, 120)))
        query = _edits(rnd, base, rnd.randint(0, 20))
        # Edits of the base, and permutations of the query: the permutations have the
        # same character counts, so only the LCS itself can tell them apart.
        candidates = [
            _edits(rnd, base, rnd.randint(0, 40))
            if rnd.random() < 0.3
            else "".join(rnd.sample(query, len(query)))
            for _ in range(count)
        ]
        ratios = [exact_ratio(query, c) for c in candidates]
        expected = any(r >= threshold for r in ratios)
        index = NearDuplicateIndex(candidates, threshold=threshold)
        found = index.find(query)
        assert (found is not None) == expected
        if found is not None:
            assert exact_ratio(query, found) >= threshold
        assert is_near_duplicate(query, candidates, threshold) == expected

    check()


def test_packed_path_with_many_shuffles_and_one_true_match() -> None:
    rnd = random.Random(11)
    words = ["".join(rnd.choice("etaoinshr") for _ in range(rnd.randint(2, 7))) for _ in range(60)]
    shuffles = []
    for _ in range(40):
        rnd.shuffle(words)
        shuffles.append(" ".join(words))
    target = shuffles[17]
    index = NearDuplicateIndex(shuffles, threshold=0.9)
    edited = _edits(rnd, target, 6)
    assert index.find(edited) == target
    rnd.shuffle(words)
    assert index.find(" ".join(words)) is None


def test_long_and_many_character_texts_take_the_unpacked_path() -> None:
    rnd = random.Random(5)
    base = "".join(rnd.choice("abcdefgh ") for _ in range(5000))  # over the lane cap
    near = _edits(rnd, base, 200)
    far = "".join(rnd.sample(base, len(base)))
    index = NearDuplicateIndex([far, near, far[::-1]], threshold=0.9)
    assert index.find(base) == near
    assert similarity(base, near) >= 0.9 > similarity(base, far)
    wide = "".join(chr(0x4E00 + i) for i in range(300))  # 300 distinct characters
    index = NearDuplicateIndex([wide[::-1], wide[1:], wide[:150] * 2], threshold=0.95)
    assert index.find(wide) == wide[1:]


@pytest.mark.parametrize("max_bytes", [1, 64, 1 << 17])
@pytest.mark.parametrize("threshold", [0.6, 0.8, 0.9])
def test_batches_split_by_size_give_the_same_decisions(
    monkeypatch: pytest.MonkeyPatch, max_bytes: int, threshold: float
) -> None:
    import fsmemory.sanitizers._similarity as module

    monkeypatch.setattr(module, "_PACK_MAX_BYTES", max_bytes)
    rnd = random.Random(int(threshold * 100) + max_bytes)
    base = "".join(rnd.choice("abcde ") for _ in range(90))
    candidates = [_edits(rnd, base, rnd.randint(0, 30)) for _ in range(30)]
    index = NearDuplicateIndex(candidates, threshold=threshold)
    for _ in range(10):
        query = _edits(rnd, base, rnd.randint(0, 30))
        expected = any(exact_ratio(query, c) >= threshold for c in candidates)
        assert index.is_near_duplicate(query) == expected
