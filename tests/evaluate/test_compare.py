"""``compare``: a document suite's page-level metrics are paired too (``page <metric>``), from the same
per-question rows the report averages."""

from __future__ import annotations

import json
from pathlib import Path

from mmrag.evaluate.compare import compare_reports
from mmrag.evaluate.runner import run_suite
from mmrag.evaluate.suite import load_suite
from tests.evaluate.conftest import FakePipeline


def test_page_metrics_of_a_document_suite_are_compared(suite_dir: Path, tmp_path: Path) -> None:
    spec = (suite_dir / "suite.yaml").read_text().replace("  qa: qa.jsonl\n", "  judge: document\n")
    (suite_dir / "suite.yaml").write_text(spec)
    suite = load_suite(suite_dir)
    assert suite.page_qrels["q3"] == {"beta.pdf#2": 2, "beta.pdf#1": 1}
    good = run_suite(suite, FakePipeline(), tmp_path / "good", plots=False)
    worse = run_suite(load_suite(suite_dir, variant="worse"), FakePipeline(), tmp_path / "worse", plots=False)
    result = compare_reports(good, worse, samples=200)
    rows = {}
    for name in ("good", "worse"):
        for line in (tmp_path / name / "queries.jsonl").read_text().splitlines():
            row = json.loads(line)
            rows.setdefault(row["id"], {})[name] = row["page_metrics"]["ndcg@3"]
    page = result["metrics"]["page ndcg@3"]
    assert page["n"] == 5
    assert abs(page["delta"] - sum(r["worse"] - r["good"] for r in rows.values()) / 5) < 1e-12
    assert page["delta"] < 0  # the reversed ranking puts the judged page last within its document
    assert "ndcg@3" in result["metrics"]  # the document-level rows stay
