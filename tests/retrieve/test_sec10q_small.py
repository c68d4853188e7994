"""The sec-10q suite at CI size: one company's four quarterly reports (the first pages of each: cover,
financial statements) and its single-document questions, run through the real ingestion jobs, real
MiniLM + BM25 and the suite runner, with and without the document stage. Full-size numbers:
eval/reports/sec-10q* and docs/benchmarks.md."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from mmrag.evaluate import load_suite, run_suite
from mmrag.ingest.doc_forms import latest_of_series
from mmrag.types import SearchRequest

REPO = Path(__file__).resolve().parents[2]
SEC10Q = REPO / "eval" / "suites" / "sec-10q"
CORPUS = Path("/work/shared/corpus/sec-10q/pdf") if Path("/work/shared/corpus/sec-10q/pdf").is_dir() \
    else REPO.parent / "shared" / "corpus" / "sec-10q" / "pdf"
REPORTS = ["2022 Q3 AAPL.pdf", "2023 Q1 AAPL.pdf", "2023 Q2 AAPL.pdf", "2023 Q3 AAPL.pdf"]
PAGES = 4  # cover page, contents, statements of operations and comprehensive income


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sec10q")
    (root / "pdf").mkdir()
    for name in REPORTS:
        with pymupdf.open(CORPUS / name) as src, pymupdf.open() as out:
            out.insert_pdf(src, from_page=0, to_page=PAGES - 1)
            out.set_metadata(src.metadata)
            out.save(root / "pdf" / name)
    queries = [json.loads(line) for line in (SEC10Q / "queries.jsonl").read_text().splitlines()]
    qrels = [line.split("\t") for line in (SEC10Q / "qrels.tsv").read_text().splitlines()[1:]]
    single = {qid for qid, pattern, _ in qrels if "AAPL" in pattern and pattern.count(" ") == 2}
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries if q["_id"] in single))
    (root / "qrels.tsv").write_text("".join("\t".join(r) + "\n" for r in qrels if r[0] in single))
    (root / "suite.yaml").write_text(
        f"name: sec-10q-small\ndataset:\n  corpus: {root}\n  include: ['pdf/*.pdf']\n  judge: document\n"
        "pipeline:\n  top_k: 16\nmetrics:\n  retrieval: [ndcg, mrr]\n  k: [1, 5]\n  primary: ndcg@5\n"
        "variants:\n  pages-only:\n    pipeline: {spaces: [text, bm25]}\n")
    return root


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, minilm):
    from mmrag.pipeline import build_pipeline
    from tests.conftest import make_settings

    p = build_pipeline(make_settings(tmp_path_factory.mktemp("sec10q-data") / "data"), embedders={"text": minilm})
    yield p
    p.close()


def test_document_stage_ranks_the_right_report_first(small_suite: Path, pipeline, tmp_path: Path) -> None:
    suite = load_suite(small_suite)
    assert len(suite.queries) >= 20 and all(len(j) == 1 for j in suite.qrels.values())
    with_docs = run_suite(suite, pipeline, tmp_path / "doc", plots=False)
    pages_only = run_suite(load_suite(small_suite, variant="pages-only"), pipeline, tmp_path / "pages", plots=False)
    print("sec-10q small: document stage", with_docs.metrics, "pages only", pages_only.metrics)
    assert with_docs.metrics["ndcg@5"] > pages_only.metrics["ndcg@5"] + 0.05
    assert with_docs.metrics["mrr@1"] > pages_only.metrics["mrr@1"]


def test_document_evidence_is_stored_and_shown(small_suite: Path, pipeline) -> None:
    docs = {d.filename: d for d in pipeline.catalog.documents.listed("eval-sec-10q-small")}
    facts = docs["2022 Q3 AAPL.pdf"].metadata["doc"]
    assert "Apple Inc" in facts["entities"] and facts["periods"][:2] == ["FY2022-Q3", "2022-06-25"]
    assert facts["date"] == "2022-06-25" and facts["form"] == "10-Q" and facts["tickers"] == ["AAPL"]
    assert latest_of_series(pipeline.catalog.documents.facts("eval-sec-10q-small")) == [docs["2023 Q3 AAPL.pdf"].id]
    result = pipeline.search("eval-sec-10q-small", SearchRequest(query="Apple net sales quarter ended April 1, 2023",
                                                                  top_k=3))
    assert result.evidence[0].filename == "2023 Q2 AAPL.pdf"
    assert result.evidence[0].metadata["doc"]["periods"][:2] == ["FY2023-Q2", "2023-04-01"]
    latest = pipeline.search("eval-sec-10q-small", SearchRequest(query="Apple's net sales in its latest 10-Q", top_k=3))
    assert latest.evidence[0].filename == "2023 Q3 AAPL.pdf"  # the newest of the series
    only = pipeline.search("eval-sec-10q-small", SearchRequest(
        query="Apple net sales", top_k=3, metadata={"doc.entities": "Apple Inc"}))  # an explicit filter
    assert only.evidence and all("Apple Inc" in e.metadata["doc"]["entities"] for e in only.evidence)
