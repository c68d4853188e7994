"""run_suite's own logic (metrics, ties, failures, report files) over a keyword-matching fake pipeline;
the real pipeline and the real REST API are in test_rest_target.py."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from mmrag.errors import MMRAGError
from mmrag.evaluate.metrics import evaluate_run, mean_metrics
from mmrag.evaluate.report import REPORT_SCHEMA_VERSION, REQUIRED_KEYS, load_report
from mmrag.evaluate.runner import ProgressEvent, run_suite
from mmrag.evaluate.suite import load_suite
from mmrag.types import SearchRequest

from .conftest import FakeAnswerer, FakePipeline

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_in_process_run_writes_a_complete_report(suite_dir: Path, tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    pipeline = FakePipeline()
    report = run_suite(
        load_suite(suite_dir), pipeline, tmp_path / "run", progress=events.append, answerer=FakeAnswerer()
    )
    data = json.loads((tmp_path / "run" / "report.json").read_text())
    assert data == report.data
    assert set(REQUIRED_KEYS) <= set(data)
    assert data["schema_version"] == REPORT_SCHEMA_VERSION
    assert sorted(pipeline.ingested) == ["alpha.pdf", "beta.pdf", "gamma.pdf"]
    # the keyword fake ranks every query's best page first
    assert data["metrics"]["mrr@1"] == 1.0
    assert data["metrics"]["recall@5"] == 1.0
    assert 0.9 < data["metrics"]["ndcg@5"] < 1.0  # q3/q5 put a grade-1 page below a non-relevant one
    assert data["metrics"]["precision@1"] == 1.0
    assert data["metrics"]["anls"] == pytest.approx(0.5)  # one exact answer, one far off
    assert data["metrics"]["cited_page_accuracy"] == 0.5
    assert data["suite"]["judged_queries"] == 5
    assert data["latency"]["search"]["total"]["count"] == 5
    assert data["latency"]["search"]["total"]["p50"] == pytest.approx(0.004)
    assert "client_total" in data["latency"]["search"]
    assert data["breakdown"]["retrieval"]["text"]["n"] == 5
    rows = [json.loads(line) for line in (tmp_path / "run" / "queries.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4", "q5"]
    assert rows[0]["ranking"][0]["doc"] == "alpha.pdf#1"
    run = {r["id"]: [hit["doc"] for hit in r["ranking"]] for r in rows}
    qrels = {r["id"]: r["judgments"] for r in rows}
    recomputed = mean_metrics(evaluate_run(qrels, run, ks=[1, 3, 5]))
    assert recomputed == pytest.approx({k: v for k, v in data["metrics"].items() if "@" in k})
    assert (tmp_path / "run" / "answers.jsonl").exists()
    stages = {e.stage for e in events}
    assert stages == {"ingest", "search", "answer", "report"}
    assert [e.done for e in events if e.stage == "search"] == [1, 2, 3, 4, 5]


def test_report_markdown_and_pngs(suite_dir: Path, tmp_path: Path) -> None:
    report = run_suite(load_suite(suite_dir), FakePipeline(), tmp_path / "run")
    markdown = (tmp_path / "run" / "report.md").read_text()
    assert "# Evaluation: tiny" in markdown
    assert "| ndcg |" in markdown and "## Latency" in markdown
    plots = report.data["artefacts"]["plots"]
    assert "metric_curves" in plots and "latency_total" in plots
    for rel in plots.values():
        assert (tmp_path / "run" / rel).read_bytes()[:8] == PNG_MAGIC
        assert f"]({rel})" in markdown
    assert load_report(tmp_path / "run").metrics == report.metrics


def test_worse_variant_scores_lower_and_failures_are_recorded(suite_dir: Path, tmp_path: Path) -> None:
    good = run_suite(load_suite(suite_dir), FakePipeline(), tmp_path / "good", plots=False)
    worse = run_suite(load_suite(suite_dir, variant="worse"), FakePipeline(), tmp_path / "worse", plots=False)
    assert worse.metrics["ndcg@3"] < good.metrics["ndcg@3"]

    class Broken(FakePipeline):
        def search(self, corpus: str, request: SearchRequest) -> Any:
            if "breach" in request.query:
                raise RuntimeError("index exploded")
            return super().search(corpus, request)

    report = run_suite(load_suite(suite_dir), Broken(), tmp_path / "broken", plots=False)
    assert report.data["failures"]["search"] == 1
    assert report.metrics["mrr@1"] == pytest.approx(4 / 5)  # the failed query scores 0, not dropped


class TiedPipeline(FakePipeline):
    """Returns every page with the same score, in a different order each call."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def search(self, corpus: str, request: SearchRequest) -> Any:
        result = super().search(corpus, request)
        self.rng.shuffle(result.evidence)
        for ev in result.evidence:
            ev.score = 0.5
        return result


def test_tied_scores_are_ranked_by_the_convention(suite_dir: Path, tmp_path: Path) -> None:
    runs = [run_suite(load_suite(suite_dir), TiedPipeline(s), tmp_path / f"t{s}", plots=False) for s in (1, 2)]
    assert runs[0].metrics == runs[1].metrics  # arbitrary order of ties does not change the numbers
    assert runs[0].data["tied_results"] == 5 * 4  # top_k 5, all equal, all different pages
    first = json.loads((tmp_path / "t1" / "queries.jsonl").read_text().splitlines()[0])
    docs = [hit["doc"] for hit in first["ranking"]]
    assert docs == sorted(docs, reverse=True)
    suite = load_suite(suite_dir)
    suite.spec.metrics.rank_by = "pipeline"
    kept = [run_suite(suite, TiedPipeline(s), tmp_path / f"p{s}", plots=False).metrics for s in (1, 2, 3)]
    assert len({m["mrr@1"] for m in kept}) > 1  # without the convention the numbers wobble


def test_streaming_answerer_reads_the_done_event() -> None:
    from dataclasses import dataclass

    from mmrag.evaluate.targets import StreamingAnswerer

    @dataclass
    class Cite:
        filename: str
        page: int

    @dataclass
    class Event:
        event: str
        answer: str = ""
        mode: str = ""
        citations: tuple[Cite, ...] = ()
        timings: tuple[tuple[str, float], ...] = ()
        code: str = ""
        message: str = ""

    class Service:
        def __init__(self, events: list[Event]) -> None:
            self.events = events

        def answer_stream(self, corpus: str, question: str, top_k: int) -> Any:
            return iter(self.events)

    done = Event("done", "1868", "vlm", (Cite("alpha.pdf", 1),), (("total", 0.5),))
    result = StreamingAnswerer(Service([Event("evidence"), Event("token"), done])).answer("c", "q", 3)
    assert result == {
        "answer": "1868",
        "mode": "vlm",
        "citations": [{"filename": "alpha.pdf", "page": 1}],
        "timings": {"total": 0.5},
    }
    with pytest.raises(MMRAGError, match="overloaded"):
        StreamingAnswerer(Service([Event("error", code="overloaded", message="busy")])).answer("c", "q", 3)
    with pytest.raises(MMRAGError, match="without a final event"):
        StreamingAnswerer(Service([Event("token")])).answer("c", "q", 3)
