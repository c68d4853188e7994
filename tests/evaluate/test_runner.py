"""run_suite's own logic (metrics, ties, failures, report files) over a keyword-matching fake pipeline;
the real pipeline and the real REST API are in test_rest_target.py."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval  # declared dev dependency (PyPI pytrec-eval-terrier)

from mmrag.errors import MMRAGError
from mmrag.evaluate.metrics import evaluate_run, mean_metrics
from mmrag.evaluate.report import REPORT_SCHEMA_VERSION, REQUIRED_KEYS, load_report
from mmrag.evaluate.runner import ProgressEvent, run_suite
from mmrag.evaluate.suite import load_suite
from mmrag.types import SearchRequest

from .conftest import FakePipeline

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_in_process_run_writes_a_complete_report(suite_dir: Path, tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    pipeline = FakePipeline()
    report = run_suite(
        load_suite(suite_dir), pipeline, tmp_path / "run", progress=events.append, answers=True
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


def test_document_suite_reports_page_level_metrics_where_a_question_names_a_page(suite_dir: Path,
                                                                                   tmp_path: Path) -> None:
    spec = (suite_dir / "suite.yaml").read_text().replace("  qa: qa.jsonl\n", "  judge: document\n")
    (suite_dir / "suite.yaml").write_text(spec)
    # q1 and q3 name pages (q3's second-best page first in the fake's ranking), the rest documents
    (suite_dir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\talpha.pdf#1\t1\nq3\tbeta.pdf#1\t1\n"
                                         "q4\tgamma.pdf\t1\nq5\tbeta*\t1\n")
    suite = load_suite(suite_dir)
    assert suite.qrels == {"q1": {"alpha.pdf": 1}, "q3": {"beta.pdf": 1}, "q4": {"gamma.pdf": 1},
                           "q5": {"beta.pdf": 1}}
    assert suite.page_qrels == {"q1": {"alpha.pdf#1": 1}, "q3": {"beta.pdf#1": 1}}
    data = run_suite(suite, FakePipeline(), tmp_path / "run").data
    rows = {json.loads(line)["id"]: json.loads(line)
            for line in (tmp_path / "run" / "queries.jsonl").read_text().splitlines()}
    ranked = {q: [f"{r['doc']}#{r['page']}" for r in rows[q]["ranking"]] for q in ("q1", "q3")}
    assert ranked["q3"][:2] == ["beta.pdf#2", "beta.pdf#1"]
    run = {q: {key: float(len(keys) - i) for i, key in enumerate(keys)} for q, keys in ranked.items()}
    oracle = pytrec_eval.RelevanceEvaluator(suite.page_qrels, {"ndcg_cut.5", "recall.5", "success.1"}).evaluate(run)
    assert data["page_metrics"]["n"] == 2
    assert data["page_metrics"]["ndcg@5"] == pytest.approx(sum(v["ndcg_cut_5"] for v in oracle.values()) / 2)
    assert data["page_metrics"]["recall@5"] == pytest.approx(sum(v["recall_5"] for v in oracle.values()) / 2)
    assert data["page_metrics"]["success@1"] == pytest.approx(sum(v["success_1"] for v in oracle.values()) / 2)
    assert data["page_metrics"]["mrr@1"] == 0.5 and data["metrics"]["mrr@1"] == 1.0  # the document is first
    # right document first, computed independently: the share of questions whose first result's document is judged
    first = [rows[q]["ranking"][0]["doc"] in suite.qrels[q] for q in suite.qrels if rows[q]["ranking"]]
    assert data["metrics"]["success@1"] == pytest.approx(sum(first) / len(suite.qrels))
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Page level (2 questions that name a page)" in report
    assert f"right document first (document success@1): {data['metrics']['success@1']:.1%}" in report
    assert data["breakdown"]["pages"]["text"]["n"] == 2  # the page level per tag, over the questions naming a page


def test_document_suite_refuses_a_page_the_document_does_not_have(suite_dir: Path) -> None:
    spec = (suite_dir / "suite.yaml").read_text().replace("  qa: qa.jsonl\n", "  judge: document\n")
    (suite_dir / "suite.yaml").write_text(spec)
    (suite_dir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\talpha.pdf#9\t1\n")
    with pytest.raises(MMRAGError, match=r"judged page 'alpha\.pdf#9'"):
        load_suite(suite_dir)
