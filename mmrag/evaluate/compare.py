"""Compare two runs of the same suite: per-metric deltas with paired statistics.

For every metric both runs report (page-level ones as ``page <metric>``), the per-query values of the queries both
runs scored are paired; ``delta = mean(B - A)`` with a percentile paired
bootstrap interval and a two-sided paired randomisation (sign-flip) p-value
(:mod:`.stats`). Writes ``compare.json`` (``kind: "compare"``), ``compare.md``
and a per-query scatter plot of the primary metric.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mmrag.errors import InvalidInput
from mmrag.evaluate.report import (
    REPORT_SCHEMA_VERSION,
    Report,
    load_report,
    markdown_table,
    per_query_metrics,
)
from mmrag.evaluate.stats import compare_paired


def _label(report: Report) -> str:
    pipeline = report.data["config"]["pipeline"]
    spaces = "+".join(pipeline.get("spaces") or ["all"])
    return f"{report.out_dir.name} ({spaces})"


def _questions(report: Report) -> dict[str, Any]:
    """The dataset a run scored, less the names its documents were ingested under (the same questions and
    judgments on the same bytes: a run under hashed file names pairs with the run under the real ones)."""
    return {k: v for k, v in report.data["suite"]["dataset"].items() if k != "file_names"}


def compare_reports(
    a: Report, b: Report, *, samples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """The comparison of B against A as a JSON-ready dict (no files written)."""
    if _questions(a) != _questions(b):
        raise InvalidInput("the two runs used different datasets; compare runs of the same suite")
    qa, qb = per_query_metrics(a), per_query_metrics(b)
    shared = sorted(set(qa) & set(qb))
    metrics = [m for m in a.data["metrics"] if m in b.data["metrics"]]
    metrics += [f"page {m}" for m in a.data.get("page_metrics") or {} if m in (b.data.get("page_metrics") or {})]
    rows: dict[str, dict[str, float]] = {}
    for metric in metrics:
        ids = [i for i in shared if metric in qa[i] and metric in qb[i]]
        values_a = [qa[i][metric] for i in ids]
        values_b = [qb[i][metric] for i in ids]
        rows[metric] = compare_paired(values_a, values_b, samples=samples, confidence=confidence, seed=seed).to_dict()
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": "compare",
        "a": {"path": str(a.out_dir), "label": _label(a), "config": a.data["config"]},
        "b": {"path": str(b.out_dir), "label": _label(b), "config": b.data["config"]},
        "suite": a.data["suite"]["name"].split(":")[0],
        "paired_items": len(shared),
        "only_in_a": sorted(set(qa) - set(qb)),
        "only_in_b": sorted(set(qb) - set(qa)),
        "statistics": {
            "bootstrap_samples": samples,
            "confidence": confidence,
            "seed": seed,
            "test": "paired randomisation (sign flip), two-sided",
        },
        "metrics": rows,
    }


def render_compare_markdown(result: dict[str, Any]) -> str:
    conf = int(result["statistics"]["confidence"] * 100)
    header = ["metric", "A", "B", "Δ (B−A)", f"{conf}% CI", "p", "n"]
    rows = [
        [
            metric,
            f"{r['mean_a']:.4f}",
            f"{r['mean_b']:.4f}",
            f"{r['delta']:+.4f}",
            f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]",
            f"{r['p_value']:.4f}",
            str(int(r["n"])),
        ]
        for metric, r in result["metrics"].items()
    ]
    stats = result["statistics"]
    lines = [
        f"# Comparison on {result['suite']}\n",
        f"- A: {result['a']['label']} — `{result['a']['path']}`",
        f"- B: {result['b']['label']} — `{result['b']['path']}`",
        f"- paired items: {result['paired_items']}; bootstrap samples: {stats['bootstrap_samples']}, "
        f"seed {stats['seed']}; p from a {stats['test']} test\n",
        markdown_table(header, rows),
    ]
    plots = result.get("artefacts", {}).get("plots", {})
    lines += [f"![{name}]({rel})\n" for name, rel in plots.items()]
    return "\n".join(lines)


def compare_runs(
    path_a: Path,
    path_b: Path,
    out_dir: Path,
    *,
    samples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    plots: bool = True,
) -> dict[str, Any]:
    """Load two run folders, compare B against A, write compare.json/.md (+ scatter) to ``out_dir``."""
    a, b = load_report(path_a), load_report(path_b)
    result = compare_reports(a, b, samples=samples, confidence=confidence, seed=seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result["artefacts"] = {"markdown": "compare.md", "plots": {}}
    if plots:
        from mmrag.evaluate.plots import plot_paired_scatter

        qa, qb = per_query_metrics(a), per_query_metrics(b)
        primary = a.data["config"]["metrics"].get("primary", "ndcg@10")
        for metric in (primary, "anls"):
            ids = [i for i in sorted(set(qa) & set(qb)) if metric in qa[i] and metric in qb[i]]
            if ids:
                name = metric.replace("@", "_at_")
                plot_paired_scatter(
                    [qa[i][metric] for i in ids],
                    [qb[i][metric] for i in ids],
                    out_dir / f"scatter_{name}.png",
                    metric=metric,
                    label_a=f"A {_label(a)}",
                    label_b=f"B {_label(b)}",
                )
                result["artefacts"]["plots"][f"scatter_{name}"] = f"scatter_{name}.png"
    (out_dir / "compare.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out_dir / "compare.md").write_text(render_compare_markdown(result), encoding="utf-8")
    return result
