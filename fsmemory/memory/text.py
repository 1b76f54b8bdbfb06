"""Text analysis of ``recall``, public for code that must rank with the same terms.

The functions ``KnowledgeMemory.recall`` uses to turn a text into index terms and a
query into weighted terms (integrations such as the LangGraph store search with them,
so a search there finds what ``recall`` finds):

* :func:`words` -- normalised, case-folded word tokens (stopwords kept);
* :func:`analyze` -- index terms: :func:`words` without stopwords, stemmed;
* :func:`query_terms` -- a query's distinct terms with weights (names weigh double);
* :func:`typed_words` -- the words of a query made of stopwords only, as typed;
* :func:`stem` and :data:`STOPWORDS`.
"""

from __future__ import annotations

from fsmemory.memory._analysis import STOPWORDS, analyze, query_terms, stem, typed_words, words

__all__ = ["STOPWORDS", "analyze", "query_terms", "stem", "typed_words", "words"]
