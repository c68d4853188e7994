"""Run a suite against a target and write the report: the core that the CLI and the API call.

Usage (in-process)::

    suite = load_suite("eval/suites/docling")
    report = run_suite(suite, pipeline, Path("eval/reports/docling"), progress=print)
    report.metrics["ndcg@5"]

``run_suite`` ingests the suite's documents into ``suite.corpus_name`` (idempotent:
documents are content-addressed), runs every query, scores it against the
qrels, optionally asks every QA question, and writes into ``out_dir``:

- ``report.json`` — the versioned machine-readable report (see :mod:`.report`)
- ``report.md`` — the same for people
- ``queries.jsonl`` / ``answers.jsonl`` — one line per query / question
- ``plots/*.png`` — metric@k curves and latency histograms
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.application import AnswerRequest, Application
from mmrag.evaluate.answer_metrics import answer_metrics
from mmrag.evaluate.metrics import mean_metrics, query_metrics
from mmrag.evaluate.report import Report, write_jsonl, write_report
from mmrag.evaluate.scope import scope_filters
from mmrag.evaluate.stats import stage_latency_stats
from mmrag.evaluate.suite import QAItem, Query, Suite
from mmrag.evaluate.targets import AnswerOutcome, Hit, SearchOutcome, SearchPipeline
from mmrag.generate.answer_events import final_event
from mmrag.local_application import LocalApplication
from mmrag.types import SearchRequest


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Where a run is: ``stage`` is ingest, search, answer or report; ``done`` of ``total``."""

    stage: str
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


def _no_progress(event: ProgressEvent) -> None:
    return None


def as_target(target: Application | SearchPipeline, *, answers: bool = False) -> Application:
    """A pipeline object is wrapped in a :class:`~mmrag.local_application.LocalApplication` (``answers``:
    whether it serves answers; the caller keeps closing the pipeline); an application is returned as is."""
    if hasattr(target, "prepare") and hasattr(target, "can_answer"):
        return target  # type: ignore[return-value]
    return LocalApplication(target, answers=answers, owns_pipeline=False)  # type: ignore[arg-type]


def run_suite(
    suite: Suite,
    pipeline: Application | SearchPipeline,
    out_dir: Path,
    *,
    progress: ProgressCallback | None = None,
    answers: bool = False,
    plots: bool = True,
) -> Report:
    """Run ``suite`` against ``pipeline`` (an :class:`~mmrag.application.Application`, or an in-process
    pipeline: ``answers`` says whether its answer service is asked the suite's questions).

    ``progress`` receives a :class:`ProgressEvent` after each document, query and
    question. Errors of single queries are recorded (the query scores 0 and is
    counted in ``report.json`` ``failures``); errors of ingest propagate.
    Returns the :class:`Report` that was written to ``out_dir``.
    """
    target = as_target(pipeline, answers=answers)
    notify = progress or _no_progress
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    with tempfile.TemporaryDirectory(prefix="mmrag-eval-") as scratch:  # renamed copies live through the ingest
        files = suite.documents(out_dir, Path(scratch))
        t0 = time.perf_counter()
        ingest = target.prepare(
            suite.corpus_name,
            files,
            lambda d, t, m: notify(ProgressEvent("ingest", d, t, m)),
            suite.spec.pipeline.corpus or None,
        )
    ingest["seconds"] = time.perf_counter() - t0

    ids = suite.scope_ids()
    query_rows = [_run_query(suite, target, q, ids) for q in _notify_each(suite.queries, "search", notify)]
    answer_rows: list[dict[str, Any]] = []
    if suite.qa and suite.spec.metrics.answers and target.can_answer:
        answer_rows = [_run_question(suite, target, item) for item in _notify_each(suite.qa, "answer", notify)]

    notify(ProgressEvent("report", 0, 1, "writing report"))
    write_jsonl(out_dir / "queries.jsonl", query_rows)
    if answer_rows:
        write_jsonl(out_dir / "answers.jsonl", answer_rows)
    data = build_report_data(suite, target.description, query_rows, answer_rows, ingest, started)
    report = write_report(data, out_dir, query_rows, plots=plots)
    notify(ProgressEvent("report", 1, 1, "report written"))  # no server path in a job's message
    return report


def _notify_each(items: list[Any], stage: str, notify: ProgressCallback) -> Any:
    for done, item in enumerate(items, start=1):
        yield item
        notify(ProgressEvent(stage, done, len(items), getattr(item, "id", "")))


def _run_query(suite: Suite, target: Application, query: Query, ids: dict[str, str]) -> dict[str, Any]:
    """One query (within its scope: ``ids`` maps the suite's file names to their document ids) -> its row."""
    spec = suite.spec.pipeline
    request = SearchRequest(query=query.text, top_k=spec.top_k, spaces=spec.spaces, weights=spec.weights,
                            fusion=spec.fusion, rrf_k=spec.rrf_k, **scope_filters(query.scope, ids))
    judgments = suite.qrels.get(query.id, {})
    row: dict[str, Any] = {"id": query.id, "query": query.text, "tags": query.tags, "judgments": judgments}
    if query.scope is not None:
        row["scope"] = {"documents": list(query.scope.documents), "pages": query.scope.pages}
    t0 = time.perf_counter()
    try:
        outcome = SearchOutcome.of(target.search(suite.corpus_name, request))
    except Exception as exc:  # one failing query must not lose the run; it is reported
        row.update(error=f"{type(exc).__name__}: {exc}", ranking=[], timings={}, metrics={})
        ranking: list[str] = []
    else:
        timings = dict(outcome.timings)
        timings["client_total"] = time.perf_counter() - t0
        keyed = [(suite.doc_key(h.filename, h.page), h) for h in outcome.hits]
        row["tied"] = count_ties([(key, h.score) for key, h in keyed])
        if suite.spec.metrics.rank_by == "score":
            keyed = order_by_score(keyed)
        ranking = [key for key, _ in keyed]
        row["ranking"] = [{"doc": key, "page": h.page, "score": h.score, "scores": h.scores,
                           "document_id": h.document_id} for key, h in keyed]
        row["timings"] = timings
        row["error"] = None
    if any(g >= 1 for g in judgments.values()):
        row["metrics"] = query_metrics(ranking, judgments, suite.spec.metrics.retrieval, suite.spec.metrics.k)
    else:
        row["metrics"] = {}
    pages = suite.page_qrels.get(query.id, {})
    if any(g >= 1 for g in pages.values()):  # a document suite's question about one page: page level too
        ranked = [f"{Path(h['doc']).name}#{h['page']}" for h in row["ranking"]]
        row["page_judgments"] = pages
        row["page_metrics"] = query_metrics(ranked, pages, suite.spec.metrics.retrieval, suite.spec.metrics.k)
    return row


def order_by_score(keyed: list[tuple[str, Hit]]) -> list[tuple[str, Hit]]:
    """Score descending, equal scores by doc key descending: the trec_eval convention of
    :mod:`.metrics`, so ties the pipeline returns in arbitrary order give reproducible metrics."""
    return sorted(keyed, key=lambda pair: (pair[1].score, pair[0]), reverse=True)


def count_ties(ranked: list[tuple[str, float]]) -> int:
    """Results whose score equals the previous result's while being another page (as returned)."""
    return sum(1 for (k1, s1), (k2, s2) in itertools.pairwise(ranked) if s1 == s2 and k1 != k2)


def _run_question(suite: Suite, target: Application, item: QAItem) -> dict[str, Any]:
    row: dict[str, Any] = {"id": item.id, "question": item.question, "answers": item.answers}
    row["evidence"] = item.evidence
    row["tags"] = item.tags
    t0 = time.perf_counter()
    try:
        request = AnswerRequest(item.question, suite.spec.pipeline.answer_top_k)
        outcome = AnswerOutcome.of(final_event(target.answer(suite.corpus_name, request)))
    except Exception as exc:  # reported, scores 0
        row.update(error=f"{type(exc).__name__}: {exc}", prediction="", mode="", citations=[], timings={})
    else:
        row.update(prediction=outcome.answer, mode=outcome.mode, error=None)
        row["citations"] = [suite.doc_key(name, page) for name, page in outcome.citations]
        row["timings"] = {**outcome.timings, "client_total": time.perf_counter() - t0}
    row["metrics"] = answer_metrics(row["prediction"], item.answers, row["citations"], item.evidence)
    return row


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (portable reports)."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("../../..") else str(path)
    except ValueError:
        return str(path)


def tag_breakdown(rows: list[dict[str, Any]], key: str = "metrics") -> dict[str, dict[str, float]]:
    """Mean metrics per tag (plus ``n``), over rows that have metrics (``key``: ``page_metrics`` for the
    page level of a document suite)."""
    by_tag: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        for tag in row.get("tags", []):
            if row.get(key):
                by_tag.setdefault(tag, {})[row["id"]] = row[key]
    return {tag: {**mean_metrics(per), "n": float(len(per))} for tag, per in sorted(by_tag.items())}


def page_level(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean page-level metrics (plus ``n``) of the questions of a document suite that name a page; {} if none."""
    per = {row["id"]: row["page_metrics"] for row in rows if row.get("page_metrics")}
    return {**mean_metrics(per), "n": float(len(per))} if per else {}


def build_report_data(
    suite: Suite,
    target: str,
    query_rows: list[dict[str, Any]],
    answer_rows: list[dict[str, Any]],
    ingest: dict[str, Any],
    started: float,
) -> dict[str, Any]:
    """The content of report.json (without ``artefacts``, which writing adds)."""
    judged = {row["id"]: row["metrics"] for row in query_rows if row["metrics"]}
    metrics = mean_metrics(judged)
    if answer_rows:
        metrics.update(mean_metrics({row["id"]: row["metrics"] for row in answer_rows}))
    latency = {"search": stage_latency_stats([r["timings"] for r in query_rows if not r["error"]])}
    if answer_rows:
        latency["answer"] = stage_latency_stats([r["timings"] for r in answer_rows if not r["error"]])
    return {
        "suite": {
            "name": suite.name,
            "path": display_path(suite.path),
            "variant": suite.variant,
            "description": suite.spec.description,
            "dataset": suite.spec.dataset.model_dump(),
            "corpus_dir": display_path(suite.corpus_dir),
            "queries": len(suite.queries),
            "judged_queries": len(judged),
            "qa_items": len(suite.qa),
        },
        "config": {
            "target": target,
            "corpus": suite.corpus_name,
            "pipeline": suite.spec.pipeline.model_dump(),
            "metrics": suite.spec.metrics.model_dump(),
        },
        "metrics": metrics,
        "page_metrics": page_level(query_rows),
        "breakdown": {"retrieval": tag_breakdown(query_rows), "answers": tag_breakdown(answer_rows),
                      "pages": tag_breakdown(query_rows, "page_metrics")},
        "tied_results": sum(r.get("tied", 0) for r in query_rows),
        "answer_modes": dict(Counter(str(r.get("mode", "")) for r in answer_rows if not r["error"])),
        "failures": {
            "search": sum(1 for r in query_rows if r["error"]),
            "answer": sum(1 for r in answer_rows if r["error"]),
        },
        "latency": latency,
        "ingest": ingest,
        "started_at": started,
        "duration_s": time.time() - started,
    }
