"""The mmlongbench format reads MMLongBench-Doc's question file where it lies (nothing copied): each question
scoped to its own document, judged at page level, unanswerable ones counted and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.mmlongbench import load_mmlongbench
from mmrag.evaluate.scope import QueryScope
from mmrag.evaluate.suite import load_suite, select_tags

SHARED = Path(__file__).resolve().parents[2] / "eval" / "suites" / "mmlongbench-dev"
KINDS = {"kind:research-report-introduction", "kind:financial-report", "kind:academic-paper", "kind:guidebook",
         "kind:tutorial-workshop", "kind:administration-industry-file", "kind:brochure"}


def test_the_shared_suite_scopes_every_question_to_its_document() -> None:
    suite = load_suite(SHARED)
    raw = [json.loads(line) for line in (suite.corpus_dir / "questions.jsonl").read_text().splitlines() if line]
    assert len(suite.queries) == len(raw) == 278
    assert all(q.scope == QueryScope((row["doc_id"],)) for q, row in zip(suite.queries, raw, strict=True))
    unanswerable = [q for q in suite.queries if "unanswerable" in q.tags]
    assert len(unanswerable) == 54 and not {q.id for q in unanswerable} & set(suite.qrels)
    assert len(suite.qrels) == 223  # 224 answerable, one of which names page 0 only (tagged invalid-evidence)
    assert [q.id for q in suite.queries if "invalid-evidence" in q.tags] == ["mmlb-068"]
    first = next(i for i, row in enumerate(raw) if len(row["evidence_pages"]) > 1)
    assert suite.qrels[f"mmlb-{first + 1:03d}"] == {f"{raw[first]['doc_id']}#{p}": 1
                                                    for p in raw[first]["evidence_pages"]}  # 1-based, as given
    assert {t for q in suite.queries for t in q.tags if t.startswith("kind:")} == KINDS
    assert {t for q in suite.queries for t in q.tags if t.startswith("evidence:")} == {
        "evidence:text", "evidence:layout", "evidence:table", "evidence:chart", "evidence:figure"}
    assert len(suite.documents(Path("/nonexistent"))) == 34


def test_variants_leave_out_the_filings_document_and_change_only_the_pipeline() -> None:
    no_3m = load_suite(SHARED, variant="no-3m")
    assert len(no_3m.queries) == 274 and not any("document:3M_2018_10K.pdf" in q.tags for q in no_3m.queries)
    bm25 = load_suite(SHARED, variant="bm25-pages")
    assert bm25.spec.pipeline.spaces == ["bm25"] and bm25.corpus_name == no_3m.corpus_name == "eval-mmlongbench-dev"
    off = load_suite(SHARED, variant="ranker-off")
    assert off.spec.pipeline.settings["retrieve"]["ranking"]["ranker"] == "off" and len(off.queries) == 278


def test_a_question_without_its_document_or_pages_is_refused(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text(json.dumps({"doc_id": "a.pdf", "question": "What?"}) + "\n")
    with pytest.raises(InvalidInput, match=r"q.jsonl:1: every question needs doc_id, question and evidence_pages"):
        load_mmlongbench(tmp_path / "q.jsonl")


def test_a_selection_by_a_tag_no_question_carries_is_refused() -> None:
    suite = load_suite(SHARED)
    with pytest.raises(InvalidInput, match=r"no query carries the tags \['document:nope.pdf'\]"):
        select_tags(suite, None, ["document:nope.pdf"])
    with pytest.raises(InvalidInput, match=r"no query carries the tags \['kind:novel'\]"):
        select_tags(suite, ["kind:novel"], [])
