"""The financebench format reads FinanceBench's own question file where it lies (nothing copied)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.rank_data import page_judgments, question_fold
from mmrag.evaluate.suite import load_suite

SHARED = Path(__file__).resolve().parents[2] / "eval" / "suites" / "financebench-dev"


def test_the_shared_financebench_suite_loads_with_one_based_evidence_pages() -> None:
    suite = load_suite(SHARED)
    raw = [json.loads(line) for line in (suite.corpus_dir / "financebench-dev/questions.jsonl").read_text().splitlines()
           if line.strip()]
    assert len(suite.queries) == len(raw) == 27
    first = raw[0]
    qid = first["financebench_id"]
    expected = {f"{first['doc_name']}.pdf#{e['evidence_page_num'] + 1}" for e in first["evidence"]}
    assert set(page_judgments(suite, qid)) == expected  # 0-based in the file, 1-based pages here
    assert suite.qrels[qid] == {f"{first['doc_name']}.pdf": 1}  # each evidence page judges its document
    assert question_fold(next(q for q in suite.queries if q.id == qid), page_judgments(suite, qid)) == "3m"
    assert {Path(k).name for judged in suite.qrels.values() for k in judged} <= {
        p.name for p in suite.documents(Path("/nonexistent"))}


def test_a_question_without_its_document_is_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "q.jsonl").write_text(json.dumps({"financebench_id": "x", "question": "What?"}) + "\n")
    (tmp_path / "suite.yaml").write_text("name: t\ndataset: {format: financebench, corpus: corpus, queries: q.jsonl}\n")
    with pytest.raises(InvalidInput, match="doc_name"):
        load_suite(tmp_path, corpus_dir=tmp_path / "corpus")


def test_the_clean_companies_variant_keeps_only_questions_on_documents_no_ranker_trained_on() -> None:
    clean = load_suite(SHARED, variant="clean-companies")
    raw = [json.loads(line) for line in (clean.corpus_dir / "financebench-dev/questions.jsonl").read_text().splitlines()
           if line.strip()]
    wanted = {"AMD", "American Express", "Activision Blizzard", "CVS Health", "Kraft Heinz", "Walmart"}
    assert [q.id for q in clean.queries] == [r["financebench_id"] for r in raw if r["company"] in wanted]
    assert len(clean.queries) == 17 and set(clean.qrels) == {q.id for q in clean.queries}
    filings = {p.name for p in (clean.corpus_dir / "filings" / "pdf").glob("*.pdf")}
    asked = {k.partition("#")[0] for judged in [*clean.qrels.values(), *clean.page_qrels.values()] for k in judged}
    assert asked and not asked & filings  # no question about a filing of the suite the shipped ranker trained on
    assert len(clean.documents(Path("/nonexistent"))) == len(load_suite(SHARED).documents(Path("/nonexistent")))
    off = load_suite(SHARED, variant="clean-companies-ranker-off")
    assert [q.id for q in off.queries] == [q.id for q in clean.queries]
    assert off.spec.pipeline.settings["retrieve"]["ranking"]["ranker"] == "off"
