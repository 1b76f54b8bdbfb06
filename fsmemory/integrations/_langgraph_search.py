"""How :class:`~fsmemory.integrations.langgraph.FsspecStore` selects and orders items:
LangGraph's filter language, the keyword score of ``search(query=...)``, namespace match
conditions and the newest-first order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

from fsmemory.errors import InvalidInputError
from fsmemory.integrations._langgraph_files import Record
from fsmemory.memory.text import analyze
from fsmemory.memory.text import query_terms as _weighted_terms

__all__ = [
    "condition_holds",
    "keyword_score",
    "matches",
    "query_terms",
    "recency_key",
    "score_words",
]


def _apply_operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise InvalidInputError(f"unsupported filter operator {operator!r}")
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_apply_operator(value, k, v) for k, v in wanted.items())
        if not isinstance(value, dict):
            return False
        return all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def matches(value: dict[str, Any], filter_: Mapping[str, Any]) -> bool:
    return all(_compare(value.get(k), v) for k, v in filter_.items())


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query`` that :func:`keyword_score` matches, analysed as
    ``KnowledgeMemory.recall`` does (stemmed, without stopwords: ``[]`` for a query of
    stopwords only, which ``search`` matches word for word, as recall does)."""
    return list(_weighted_terms(query))


def keyword_score(query_terms: Sequence[str], text: str) -> float:
    """How well ``text`` matches the query, in [0, 1] (0: no query term occurs).

    Each query term scores 1 when it is a word of ``text`` and 0.6 when it is the start
    of one (terms of 3+ characters); with several terms the whole phrase adds 0.5. The
    sum is divided by the best possible sum. Words come from
    :func:`fsmemory.memory.text.analyze`, the analyser of ``KnowledgeMemory.recall``
    (stemmed words without stopwords).

    Args:
        query_terms: the distinct tokens of the query (see :func:`query_terms`).
        text: the item's searchable text.
    """
    words = analyze(text)
    return score_words(query_terms, words, set(words))


def score_words(
    query_terms: Sequence[str], words: list[str], vocabulary: set[str], prefix: bool = True
) -> float:
    if not query_terms:
        return 0.0
    total = 0.0
    for term in query_terms:
        if term in vocabulary:
            total += 1.0
        elif prefix and len(term) >= 3 and any(w.startswith(term) for w in vocabulary):
            total += 0.6
    if total == 0.0:
        return 0.0
    best = float(len(query_terms))
    if len(query_terms) > 1:
        best += 0.5
        if " ".join(query_terms) in " ".join(words):
            total += 0.5
    return total / best


def recency_key(record: Record) -> tuple[float, tuple[str, ...], str]:
    return (-record.updated_at.timestamp(), record.namespace, record.key)


def condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(namespace) < len(pattern):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, pattern, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(pattern), strict=False)
    else:
        raise InvalidInputError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)
