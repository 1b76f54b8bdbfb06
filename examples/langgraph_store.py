"""LangGraph long-term memory as plain JSON files: FsspecStore in a compiled StateGraph.

Needs ``pip install 'fsmemory[langgraph]'``. Runs offline on a temporary folder; the
same code works with ``s3://``, ``gs://``, ``redis://`` or ``memory://`` URLs.

Run: python examples/langgraph_store.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from fsmemory.integrations.langgraph import FsspecStore


class State(TypedDict):
    user: str
    message: str
    reply: str


def learn(state: State, *, store: BaseStore) -> dict[str, Any]:
    """Keep every message that states a preference (a real agent would ask its model)."""
    if "prefer" in state["message"]:
        key = f"pref-{len(store.search(('memories', state['user']), limit=1000))}"
        store.put(("memories", state["user"]), key, {"text": state["message"]})
    return {}


def answer(state: State, *, store: BaseStore) -> dict[str, Any]:
    """Answer from what the store knows about this user, ranked by the message."""
    known = store.search(("memories", state["user"]), query=state["message"], limit=3)
    facts = "; ".join(item.value["text"] for item in known) or "nothing yet"
    return {"reply": f"What I know about {state['user']}: {facts}"}


def build(store: BaseStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("learn", learn)
    builder.add_node("answer", answer)
    builder.add_edge(START, "learn")
    builder.add_edge("learn", "answer")
    builder.add_edge("answer", END)
    return builder.compile(store=store)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "langgraph-memory"
        graph = build(FsspecStore(root))
        for message in ("I prefer green tea", "I prefer short answers", "What tea do I like?"):
            out = graph.invoke({"user": "ada", "message": message, "reply": ""})
            print(f"> {message}\n  {out['reply']}")

        # Another process (or tomorrow's run) opens the same folder and sees the same items.
        again = FsspecStore(root)
        texts = sorted(i.value["text"] for i in again.search(("memories", "ada")))
        assert texts == ["I prefer green tea", "I prefer short answers"], texts
        assert again.list_namespaces() == [("memories", "ada")]
        print("\nfiles:", sorted(str(p.relative_to(root)) for p in root.rglob("*.json")))
        print((root / "memories" / "ada" / "pref-0.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
