"""A suite query's scope (documents and/or pages): refused when it cannot hold a page, naming the query; and
applied by the runner on the real in-process pipeline (REST: tests/evaluate/test_rest_target.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.runner import run_suite
from mmrag.evaluate.scope import QueryScope, document_ids, parse_scope, scope_filters
from mmrag.evaluate.suite import load_suite
from mmrag.ingest.ids import document_id
from mmrag.pipeline import build_pipeline
from tests.conftest import make_settings


def write_queries(suite_dir: Path, rows: list[dict]) -> None:
    (suite_dir / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (suite_dir / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{r['_id']}\tbeta.pdf#1\t1\n" for r in rows))


@pytest.mark.parametrize(("scope", "message"), [
    ({"documents": ["missing.pdf"]}, r"query 'bad': scope names documents \['missing.pdf'\]"),
    ({"pages": {"first": 3, "last": 2}}, r"query 'bad': scope.pages is reversed \(3..2\)"),
    ({"documents": ["gamma.pdf"], "pages": {"first": 2, "last": 9}}, r"query 'bad': scope pages 2..9 hold no page"),
    ({"pages": {"first": 0, "last": 2}}, r"query 'bad': scope.pages needs whole page numbers from 1"),
    ({"documents": []}, r"query 'bad': scope.documents must be a non-empty list"),
    ({"document_ids": ["ab"]}, r"query 'bad': scope must be an object with documents and/or pages"),
    ({"pages": "2-5"}, r"query 'bad': scope.pages must be"),
])
def test_a_scope_that_cannot_hold_a_page_is_refused_naming_the_query(suite_dir: Path, scope: dict,
                                                                      message: str) -> None:
    write_queries(suite_dir, [{"_id": "ok", "text": "nut"}, {"_id": "bad", "text": "nut", "scope": scope}])
    with pytest.raises(InvalidInput, match=message):
        load_suite(suite_dir)


def test_a_scope_reads_as_the_search_request_fields(suite_dir: Path, tmp_path: Path) -> None:
    write_queries(suite_dir, [{"_id": "a", "text": "nut", "scope": {"documents": ["beta.pdf"], "pages": {"first": 2}}},
                              {"_id": "b", "text": "nut"}])
    suite = load_suite(suite_dir)
    assert suite.queries[0].scope == QueryScope(("beta.pdf",), (2, 2)) and suite.queries[1].scope is None
    ids = document_ids(suite.documents(tmp_path))
    assert ids["beta.pdf"] == document_id((suite.corpus_dir / "beta.pdf").read_bytes())  # what ingestion names it
    assert scope_filters(suite.queries[0].scope, ids) == {"document_ids": [ids["beta.pdf"]], "pages": (2, 2)}
    assert scope_filters(parse_scope({"pages": {"first": 1, "last": 2}}, "x"), ids) == {"document_ids": None,
                                                                                      "pages": (1, 2)}
    assert scope_filters(None, ids) == {}


def test_the_runner_searches_each_query_within_its_scope(suite_dir: Path, tmp_path: Path, minilm) -> None:
    write_queries(suite_dir, [
        {"_id": "free", "text": "typewriter patented in 1868 by Sholes, nut"},  # BM25 (the suite's space)
        {"_id": "in-beta", "text": "typewriter patented in 1868 by Sholes, nut", "scope": {"documents": ["beta.pdf"]}},
        {"_id": "page-2", "text": "typewriter patented in 1868 by Sholes, nut",
         "scope": {"pages": {"first": 2, "last": 3}}},
        {"_id": "both", "text": "nut blank", "scope": {"documents": ["beta.pdf", "gamma.pdf"], "pages": {"first": 3}}},
    ])
    suite = load_suite(suite_dir)
    pipeline = build_pipeline(make_settings(tmp_path / "data"), embedders={"text": minilm})
    try:
        run_suite(suite, pipeline, tmp_path / "run", plots=False)
    finally:
        pipeline.close()
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "queries.jsonl").read_text().splitlines())}
    hits = {qid: [(h["doc"].partition("#")[0], h["page"]) for h in row["ranking"]] for qid, row in rows.items()}
    assert hits["free"][0] == ("alpha.pdf", 1) and {doc for doc, _ in hits["free"]} == {"alpha.pdf", "beta.pdf"}
    assert hits["in-beta"] and {doc for doc, _ in hits["in-beta"]} == {"beta.pdf"}
    assert hits["page-2"] == [("beta.pdf", 2)]  # the one page of 2..3 holding a query word
    assert hits["both"] == [("beta.pdf", 3)]
    assert rows["both"]["scope"] == {"documents": ["beta.pdf", "gamma.pdf"], "pages": [3, 3]}
    assert "scope" not in rows["free"]
