"""PNG plots for reports (matplotlib, Agg backend; no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _save(fig: Any, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def plot_metric_curves(metrics: Mapping[str, float], path: Path) -> str:
    """One line per metric family over its cutoffs (``ndcg@1``, ``ndcg@3``, ...)."""
    families: dict[str, list[tuple[int, float]]] = {}
    for key, value in metrics.items():
        name, sep, k = key.partition("@")
        if sep and k.isdigit():
            families.setdefault(name, []).append((int(k), value))
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in sorted(families.items()):
        points.sort()
        ax.plot([k for k, _ in points], [v for _, v in points], marker="o", label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("mean over queries")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if families:
        ax.legend()
    ax.set_title("Retrieval metrics at k")
    return _save(fig, path)


def plot_latency_histograms(rows: Sequence[Mapping[str, Any]], folder: Path) -> dict[str, str]:
    """One histogram (milliseconds) per timing stage present in ``rows[*]["timings"]``."""
    by_stage: dict[str, list[float]] = {}
    for row in rows:
        for stage, seconds in (row.get("timings") or {}).items():
            by_stage.setdefault(stage, []).append(float(seconds) * 1000)
    out = {}
    for stage, values in sorted(by_stage.items()):
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4477aa")
        ax.set_xlabel(f"{stage} (ms)")
        ax.set_ylabel("queries")
        ax.set_title(f"search latency: {stage}")
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stage)
        out[f"latency_{safe}"] = _save(fig, folder / f"latency_{safe}.png")
    return out


def plot_paired_scatter(
    a: Sequence[float], b: Sequence[float], path: Path, *, metric: str, label_a: str, label_b: str
) -> str:
    """Per-query scatter of run A (x) against run B (y) on one metric, with the diagonal."""
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(a, b, alpha=0.6, s=22)
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel(f"{label_a} {metric}")
    ax.set_ylabel(f"{label_b} {metric}")
    ax.set_title(f"per-query {metric}")
    ax.grid(alpha=0.3)
    return _save(fig, path)
