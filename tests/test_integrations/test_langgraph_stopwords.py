"""FsspecStore.search with a query of stopwords only matches them word for word.

The search terms are analysed as ``KnowledgeMemory.recall`` analyses them, without
stopwords, so ``query="before"`` used to match nothing, even an item that is exactly
"before". Like recall, such a query now matches its words whole, as typed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from fsmemory.integrations.langgraph import FsspecStore, query_terms

TEXTS = {
    "a": "before",
    "b": "do it BEFORE noon",
    "c": "beforehand",  # not the whole word
    "d": "not",
    "e": "Not now, not before lunch",
    "f": "nothing here",  # "not" only as a prefix
}


def _keys(store: FsspecStore, query: str) -> list[str]:
    return [i.key for i in store.search(("notes",), query=query, limit=20)]


def test_stopword_queries_match_whole_words(tmp_path: Path) -> None:
    store = FsspecStore(tmp_path)
    for key, text in TEXTS.items():
        store.put(("notes",), key, {"text": text})
    store.put(("notes",), "hidden", {"text": "before"}, index=False)
    assert query_terms("before") == []
    assert sorted(_keys(store, "before")) == ["a", "b", "e"]
    assert sorted(_keys(store, "Not?")) == ["d", "e"]
    # Both words, side by side: the phrase ranks first.
    assert _keys(store, "not before")[0] == "e"
    assert sorted(_keys(store, "not before")) == ["a", "b", "d", "e"]
    assert _keys(store, "would they") == []
    # Any other word: stopwords dropped and prefixes matched as before.
    assert _keys(store, "noon") == ["b"]
    assert sorted(_keys(store, "beforehan")) == ["c"]
    # A fresh store over the same files answers the same.
    again = FsspecStore(tmp_path)
    for query in ("before", "not", "not before", "noon"):
        assert _keys(again, query) == _keys(store, query)
