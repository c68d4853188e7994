"""Reports: a versioned JSON document, a Markdown rendering, and plots.

``report.json`` (schema version :data:`REPORT_SCHEMA_VERSION`) top-level keys:

- ``schema_version`` (int), ``kind`` (``"run"``)
- ``suite``: name, path, variant, dataset spec, corpus_dir, counts (over REST: :func:`public_report`, no folders)
- ``config``: target (in-process / api URL), corpus, pipeline spec, metrics spec
- ``metrics``: ``{"ndcg@5": float, ..., "anls": float, ...}`` — means over judged queries / QA items
- ``page_metrics``: in a suite judged at document level, page-level means (plus ``n``) over the
  questions whose judgments name a page (``{}`` when none does)
- ``breakdown``: per-tag means (``retrieval``, ``answers``, and ``pages``: page level of a document suite)
- ``failures``: queries / questions whose call raised
- ``latency``: ``{"search": {stage: {count, mean, p50, p95, p99, max}}, "answer": {...}}`` seconds
- ``ingest``: documents, pages, seconds
- ``artefacts``: paths relative to the report folder (queries, answers, markdown, plots)
- ``started_at`` (unix s), ``duration_s``
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.errors import InvalidInput

REPORT_SCHEMA_VERSION = 1
REQUIRED_KEYS = ("schema_version", "kind", "suite", "config", "metrics", "latency", "artefacts")


@dataclass(slots=True)
class Report:
    """A written run report. ``data`` is exactly what report.json holds."""

    data: dict[str, Any]
    out_dir: Path

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self.data["metrics"])

    @property
    def path(self) -> Path:
        return self.out_dir / "report.json"


SERVER_PATHS = ("path", "corpus_dir")  # suite keys naming folders of the machine that ran it


def public_report(data: dict[str, Any], suite: str) -> dict[str, Any]:
    """A report as a REST client gets it: the suite named by its public name, no folder of the server
    (``suite.path``, ``suite.corpus_dir`` and ``suite.dataset.corpus`` dropped)."""
    out = copy.deepcopy(data)
    info = out.get("suite")
    if isinstance(info, dict):
        for key in SERVER_PATHS:
            info.pop(key, None)
        if isinstance(info.get("dataset"), dict):
            info["dataset"].pop("corpus", None)
        info["id"] = suite  # the name POST /evaluations takes
    return out


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_report(
    data: dict[str, Any], out_dir: Path, query_rows: list[dict[str, Any]], *, plots: bool = True
) -> Report:
    """Add schema and artefacts to ``data``, draw plots, write report.json and report.md."""
    data = {"schema_version": REPORT_SCHEMA_VERSION, "kind": "run", **data}
    artefacts: dict[str, Any] = {"queries": "queries.jsonl", "markdown": "report.md", "plots": {}}
    if (out_dir / "answers.jsonl").exists():
        artefacts["answers"] = "answers.jsonl"
    if plots:
        from mmrag.evaluate.plots import plot_latency_histograms, plot_metric_curves

        artefacts["plots"] = {
            "metric_curves": plot_metric_curves(data["metrics"], out_dir / "plots" / "metrics_at_k.png"),
            **plot_latency_histograms(query_rows, out_dir / "plots"),
        }
        artefacts["plots"] = {k: str(Path(v).relative_to(out_dir)) for k, v in artefacts["plots"].items()}
    data["artefacts"] = artefacts
    (out_dir / "report.json").write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render_markdown(data), encoding="utf-8")
    return Report(data, out_dir)


def load_report(path: Path) -> Report:
    """A report folder (or its report.json); checks the schema version and keys."""
    path = Path(path)
    file = path / "report.json" if path.is_dir() else path
    if not file.is_file():
        raise InvalidInput(f"no report at {path}: expected a folder holding report.json")
    data = json.loads(file.read_text(encoding="utf-8"))
    if data.get("schema_version") != REPORT_SCHEMA_VERSION:
        raise InvalidInput(
            f"{file}: schema_version {data.get('schema_version')!r}; this mmrag reads {REPORT_SCHEMA_VERSION}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise InvalidInput(f"{file}: missing keys {missing}")
    return Report(data, file.parent)


def per_query_metrics(report: Report) -> dict[str, dict[str, float]]:
    """``{item id: {metric: value}}`` from the run's queries.jsonl (and answers.jsonl); page-level metrics
    (questions that name a page) as ``page <metric>``."""
    out: dict[str, dict[str, float]] = {}
    for name in ("queries", "answers"):
        rel = report.data["artefacts"].get(name)
        if rel:
            for row in read_jsonl(report.out_dir / rel):
                if row["metrics"]:
                    out.setdefault(row["id"], {}).update(row["metrics"])
                if row.get("page_metrics"):
                    out.setdefault(row["id"], {}).update({f"page {k}": v for k, v in row["page_metrics"].items()})
    return out


def _fmt(value: float) -> str:
    return f"{value:.4f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _metric_grid(metrics: dict[str, float]) -> str:
    families: dict[str, dict[int, float]] = {}
    others: dict[str, float] = {}
    for key, value in metrics.items():
        name, sep, k = key.partition("@")
        if sep and k.isdigit():
            families.setdefault(name, {})[int(k)] = value
        else:
            others[key] = value
    out = ""
    ks = sorted({k for values in families.values() for k in values})
    if families:
        rows = [[name] + [_fmt(v[k]) if k in v else "" for k in ks] for name, v in families.items()]
        out += markdown_table(["metric"] + [f"@{k}" for k in ks], rows)
    if others:
        out += "\n" + markdown_table(["answer metric", "value"], [[k, _fmt(v)] for k, v in others.items()])
    return out


def _latency_table(latency: dict[str, dict[str, dict[str, float]]]) -> str:
    rows = []
    for group, stages in latency.items():
        for stage, s in stages.items():
            ms = [f"{s[q] * 1000:.1f}" for q in ("mean", "p50", "p95", "p99", "max")]
            rows.append([f"{group}.{stage}", str(int(s["count"])), *ms])
    return markdown_table(["stage", "n", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows)


def _ingest_line(ingest: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in ingest.items())


def render_markdown(data: dict[str, Any]) -> str:
    """report.md: headline metrics, per-tag breakdown, latencies, plots."""
    suite, config = data["suite"], data["config"]
    pipeline = config["pipeline"]
    dataset = suite.get("dataset", {})
    split = f", split {dataset['split']}" if dataset.get("split") else ""
    out = [f"# Evaluation: {suite['name']}\n"]
    if suite.get("description"):
        out.append(suite["description"].strip() + "\n")
    out.append(
        f"- target: {config['target']}, corpus `{config['corpus']}`\n"
        f"- spaces: {pipeline.get('spaces') or 'all'}, weights: {pipeline.get('weights') or 'default'}, "
        f"top_k: {pipeline.get('top_k')}\n"
        f"- queries: {suite['queries']} ({suite['judged_queries']} judged), QA items: {suite['qa_items']}{split}\n"
        f"- failures: {data.get('failures', {})}; results tied with the one above: "
        f"{data.get('tied_results', 0)} "
        f"(ranked by {config['metrics'].get('rank_by', 'score')})\n"
        f"- answer modes: {data.get('answer_modes') or 'no answers'}\n"
        f"- ingest: {_ingest_line(data.get('ingest', {}))}\n"
    )
    if dataset.get("judge") == "document" and "success@1" in data["metrics"]:
        out.append(f"- right document first (document success@1): {data['metrics']['success@1']:.1%}\n")
    out.append("\n## Metrics\n\n" + _metric_grid(data["metrics"]))
    if page := {k: v for k, v in data.get("page_metrics", {}).items() if k != "n"}:
        out.append(f"\n## Page level ({int(data['page_metrics']['n'])} questions that name a page)\n\n"
                   + _metric_grid(page))
    breakdown = data.get("breakdown", {}).get("retrieval", {})
    primary = config["metrics"].get("primary", "ndcg@10")
    pages = data.get("breakdown", {}).get("pages", {})
    if breakdown and pages:
        rows = [[tag, str(int(v["n"])), _fmt(v.get(primary, 0.0)), _fmt(pages.get(tag, {}).get(primary, 0.0))]
                for tag, v in breakdown.items()]
        out.append(f"\n## By tag ({primary})\n\n" + markdown_table(["tag", "n", primary, f"page {primary}"], rows))
    elif breakdown:
        rows = [[tag, str(int(v["n"])), _fmt(v.get(primary, 0.0))] for tag, v in breakdown.items()]
        out.append(f"\n## By tag ({primary})\n\n" + markdown_table(["tag", "n", primary], rows))
    if data.get("latency"):
        out.append("\n## Latency\n\n" + _latency_table(data["latency"]))
    plots = data.get("artefacts", {}).get("plots", {})
    if plots:
        out.append("\n## Plots\n\n" + "".join(f"![{name}]({rel})\n\n" for name, rel in plots.items()))
    return "\n".join(out)
