"""Recall: ranked keyword search by default, hybrid with any embedder.

Run: python examples/hybrid_recall.py   (the hybrid part needs numpy)

The embedder here is a toy (a bag of words where a few synonyms share a slot) so the
example runs offline; bring OpenAI embeddings, fastembed or sentence-transformers the
same way: any batched ``texts -> vectors`` function.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from fsmemory import KnowledgeMemory

SLOTS = {"car": 0, "automobile": 0, "vehicle": 0, "dinner": 1, "supper": 1, "meal": 1}


def toy_embedder(texts: Sequence[str]) -> list[list[float]]:
    """A 32-slot bag of words; synonyms share a slot."""
    out = []
    for text in texts:
        vec = [0.0] * 32
        for word in text.lower().replace("?", " ").split():
            vec[SLOTS.get(word, 2 + sum(map(ord, word)) % 30)] += 1.0
        out.append(vec)
    return out


toy_embedder.name = "toy-bag-of-words"  # type: ignore[attr-defined]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        km = KnowledgeMemory(Path(tmp) / "memory")
        km.remember("Melanie painted a sunrise last summer", importance=0.6)
        km.remember("Caroline went hiking with her family")
        km.remember("Booked the automobile for a repair on Friday")
        # Stemming and irregular forms: no exact word in common.
        found = km.recall("What did Melanie paint?", limit=1)
        print("paint ->", found[0].content)
        assert found[0].content.startswith("Melanie painted")
        print("does Caroline go hiking ->", km.recall("does Caroline go hiking")[0].content)
        # Stopwords alone (left out of the index) are matched word for word.
        assert [e.content for e in km.recall("the and of")] == [
            "Booked the automobile for a repair on Friday"
        ]

        try:
            import numpy  # noqa: F401
        except ImportError:
            print("numpy is not installed: skipping the hybrid part")
            return
        hybrid = KnowledgeMemory(Path(tmp) / "memory", embedder=toy_embedder)
        car = hybrid.recall("when is the car ready", limit=1)
        print("car (hybrid) ->", car[0].content)
        assert "automobile" in car[0].content
        print("vector files:", sorted(p.name for p in (Path(tmp) / "memory" / "vectors").iterdir()))


if __name__ == "__main__":
    main()
