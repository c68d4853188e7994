"""The shipped docling suite, in-process on the real pipeline (text spaces): hybrid vs BM25.

Slow (ingest OCRs the scans and embeds 55 pages with MiniLM on CPU: ~3 minutes); skipped when
the corpus is not there. The same suite in-process vs over REST: test_rest_target.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.config import load_settings, merge_settings
from mmrag.evaluate.compare import compare_runs
from mmrag.evaluate.runner import run_suite
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval" / "suites" / "docling"
CORPUS = REPO.parent / "shared" / "corpus" / "docling"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CORPUS.is_dir(), reason="docling corpus absent"),
]


def test_docling_hybrid_vs_bm25(tmp_path: Path) -> None:
    hybrid_suite = load_suite(SUITE)
    bm25_suite = load_suite(SUITE, variant="bm25")
    settings = merge_settings(load_settings(data_dir=tmp_path / "data"), hybrid_suite.spec.pipeline.settings)
    settings.vlm.backend = "none"
    pipeline = build_pipeline(settings)
    try:
        hybrid = run_suite(hybrid_suite, pipeline, tmp_path / "hybrid", answers=True)
        bm25 = run_suite(bm25_suite, pipeline, tmp_path / "bm25", plots=False)  # same corpus, no re-ingest
    finally:
        pipeline.close()

    for report in (hybrid, bm25):
        assert report.data["failures"] == {"search": 0, "answer": 0}
        assert report.data["suite"]["judged_queries"] == len(hybrid_suite.queries)
        assert report.data["ingest"]["pages"] == 55
        assert report.data["latency"]["search"]["total"]["count"] == len(hybrid_suite.queries)
    # text retrieval finds text-layer and OCRed pages; figure-only queries need visual spaces
    assert hybrid.metrics["ndcg@5"] > 0.7
    assert bm25.metrics["ndcg@5"] > 0.5
    assert hybrid.data["breakdown"]["retrieval"]["scan"]["recall@10"] > 0.8
    assert "cited_page_accuracy" in hybrid.metrics

    result = compare_runs(tmp_path / "bm25", tmp_path / "hybrid", tmp_path / "cmp", samples=2000)
    ndcg = result["metrics"]["ndcg@5"]
    assert ndcg["n"] == len(hybrid_suite.queries)
    assert ndcg["ci_low"] <= ndcg["delta"] <= ndcg["ci_high"]
    assert ndcg["delta"] == pytest.approx(hybrid.metrics["ndcg@5"] - bm25.metrics["ndcg@5"])
