"""Draw the latency-vs-size plots of ``benchmarks/run.py`` (needs matplotlib).

    python benchmarks/peers/plot.py SERIES.json OUT_DIR

``SERIES.json`` maps a plot name to ``{"title", "ylabel", "series": {system: [[size,
median_ms, low_ms, high_ms], ...]}}`` (low/high: 10th/90th percentiles). Each plot is
written as ``OUT_DIR/<name>.png``, log-log, one line per system with that band shaded.
matplotlib is a benchmark-only dependency: run.py calls this with an interpreter that
has it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

STYLE = {
    "fsmemory": {"color": "#1f77b4", "marker": "o"},
    "selectools 1.3.0": {"color": "#d62728", "marker": "s"},
}


def draw(name: str, spec: dict[str, Any], out: Path) -> Path:
    """Write one plot; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=110)
    for system, points in spec["series"].items():
        if not points:
            continue
        points = sorted(points)
        sizes = [p[0] for p in points]
        medians = [p[1] for p in points]
        style = STYLE.get(system, {"marker": "^"})
        ax.plot(sizes, medians, label=system, linewidth=2, **style)
        ax.fill_between(
            sizes,
            [p[2] for p in points],
            [p[3] for p in points],
            color=style.get("color"),
            alpha=0.12,
            linewidth=0,
        )
        for size, median in zip(sizes, medians, strict=True):
            ax.annotate(
                _label(median),
                (size, median),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontsize=7,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("entries in memory")
    ax.set_ylabel(spec.get("ylabel", "ms per call: median, 10th-90th percentile shaded"))
    ax.set_title(spec["title"], fontsize=11)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend()
    fig.tight_layout()
    path = out / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _label(ms: float) -> str:
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.1f} ms"
    return f"{ms * 1000:.0f} us"


def main(argv: list[str]) -> None:
    """Entry point: ``plot.py SERIES.json OUT_DIR``."""
    if len(argv) != 3:
        raise SystemExit(__doc__)
    specs = json.loads(Path(argv[1]).read_text())
    out = Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        print(draw(name, spec, out).name)


if __name__ == "__main__":
    main(sys.argv)
