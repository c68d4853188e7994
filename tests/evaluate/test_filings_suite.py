"""The shipped filings suites load and are well formed: every judged page lies inside its PDF, each
question has one right document, the tuning and held-apart halves are disjoint and cover every
company, kind and kind of question, and the files are what build.py writes from questions.yaml.
Nothing is ingested."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pymupdf
import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.suite import Suite, list_documents, load_suite

REPO = Path(__file__).resolve().parents[2]
FILINGS = REPO / "eval" / "suites" / "filings"
FEW = REPO / "eval" / "suites" / "filings-few"
COMPANIES = {"3m", "coca-cola", "ebay", "jpmorgan", "mcdonalds", "salesforce"}
KINDS = {"10-K", "10-Q", "8-K", "earnings"}
SHAPES = {"table", "text", "multi-year", "multi-page", "long-instruction", "latest", "income-statement",
          "balance-sheet", "cash-flow", "equity", "note", "segment", "debt", "tax", "risk-factors", "mdna", "event"}
PERIODS = {"fy-yyyy", "fy-yy", "fiscal", "annual-report", "quarter", "half", "range", "latest"}
NAMES = {"common", "ticker", "abbrev", "legal"}


def build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("filings_build", FILINGS / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def values(tags: set[str], prefix: str) -> set[str]:
    return {t.removeprefix(prefix) for t in tags if t.startswith(prefix)}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(FILINGS)  # load_suite checks every judged page against its PDF's page count


def test_every_judged_page_is_inside_its_pdf(suite: Suite) -> None:
    counts = {}
    for path in list_documents(suite.corpus_dir, suite.spec.dataset.include):
        with pymupdf.open(path) as pdf:
            counts[path.name] = pdf.page_count
    assert len(counts) == 39 and sum(counts.values()) == 5002
    for qid, judged in suite.page_qrels.items():
        for key, grade in judged.items():
            name, _, page = key.rpartition("#")
            assert 1 <= int(page) <= counts[name], (qid, key)
            assert grade in (1, 2), (qid, key)


def test_each_question_has_one_right_document_and_a_grade_2_page(suite: Suite) -> None:
    assert len(suite.queries) >= 180
    rows = {json.loads(line)["_id"]: json.loads(line) for line in (FILINGS / "queries.jsonl").read_text().splitlines()}
    for query in suite.queries:
        assert list(suite.qrels[query.id]) == [rows[query.id]["document"]], query.id
        assert 2 in suite.page_qrels[query.id].values(), query.id
        assert rows[query.id]["answer"], query.id


def test_halves_are_disjoint_and_cover_every_company_kind_and_tag(suite: Suite) -> None:
    tune, test = load_suite(FILINGS, split="tune"), load_suite(FILINGS, split="test")
    tune_ids, test_ids = {q.id for q in tune.queries}, {q.id for q in test.queries}
    assert tune_ids and test_ids and not tune_ids & test_ids
    assert tune_ids | test_ids == {q.id for q in suite.queries}
    assert set(tune.page_qrels) == tune_ids and set(test.page_qrels) == test_ids
    assert abs(len(tune_ids) - len(test_ids)) <= 2
    for half in (tune, test):
        tags = {t for q in half.queries for t in q.tags}
        assert values(tags, "company:") == COMPANIES and values(tags, "kind:") == KINDS
        assert tags >= SHAPES
    counts = Counter(t for q in suite.queries for t in q.tags)
    assert counts["table"] >= 50  # issue 20's table suite
    assert values(set(counts), "period:") >= PERIODS and values(set(counts), "name:") >= NAMES
    assert load_suite(FILINGS, variant="pages-only", split="test").spec.pipeline.spaces == ["text", "bm25"]
    assert {q.id for q in load_suite(FILINGS, variant="test").queries} == test_ids


def test_few_documents_suite_is_the_filings_questions_on_twelve_documents(suite: Suite) -> None:
    few = load_suite(FEW)
    documents = list_documents(few.corpus_dir, few.spec.dataset.include)
    pages = 0
    for path in documents:
        with pymupdf.open(path) as pdf:
            pages += pdf.page_count
    assert (len(documents), pages) == (12, 265)
    assert few.corpus_name != suite.corpus_name
    names = {p.name for p in documents}
    expected = {q.id for q in suite.queries if next(iter(suite.qrels[q.id])) in names}
    assert {q.id for q in few.queries} == expected and len(expected) >= 40
    for query in few.queries:
        assert few.page_qrels[query.id] == suite.page_qrels[query.id]
        assert query.split == next(q.split for q in suite.queries if q.id == query.id)


def test_files_are_what_build_py_writes() -> None:
    build = build_module()
    for path, text in build.outputs(build.CORPUS).items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run eval/suites/filings/build.py"


def test_build_keeps_recorded_splits_and_balances_new_questions() -> None:
    build = build_module()
    rows = [{"id": f"q{i}", "doc": "3M_2015_10K.pdf", "tags": ["table"]} for i in range(6)]
    splits = build.assign_splits(rows, {"q0": "test", "q1": "test"})
    assert splits["q0"] == splits["q1"] == "test"
    assert Counter(splits.values()) == {"tune": 3, "test": 3}
    assert build.assign_splits(rows, {"q0": "test", "q1": "test"}) == splits  # seeded: the same every time


def test_an_unknown_split_is_refused() -> None:
    with pytest.raises(InvalidInput, match="no query has split 'nope'"):
        load_suite(FILINGS, split="nope")
