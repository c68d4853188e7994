"""Suite loading: pdf-qrels, BEIR, variants, validation errors, and the shipped docling suite."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.qrels import load_qrels
from mmrag.evaluate.suite import load_suite

REPO = Path(__file__).resolve().parents[2]
DOCLING = REPO / "eval" / "suites" / "docling"


def test_pdf_qrels_suite_loads(suite_dir: Path, tmp_path: Path) -> None:
    suite = load_suite(suite_dir)
    assert suite.name == "tiny"
    assert [q.id for q in suite.queries] == ["q1", "q2", "q3", "q4", "q5"]
    assert suite.qrels["q2"] == {"alpha.pdf#2": 2, "alpha.pdf#1": 1}
    assert [d.name for d in suite.documents(tmp_path)] == ["alpha.pdf", "beta.pdf", "gamma.pdf"]
    assert suite.qa[0].evidence == ["alpha.pdf#1"] and suite.qa[1].evidence == ["gamma.pdf#1"]
    assert suite.doc_key("sub/alpha.pdf", 2) == "alpha.pdf#2"
    assert suite.corpus_name == "eval-tiny"
    worse = load_suite(suite_dir / "suite.yaml", variant="worse")
    assert worse.spec.pipeline.spaces == ["worse"] and worse.spec.pipeline.top_k == 5
    assert worse.name == "tiny:worse"


def test_corpus_override_and_bad_inputs(suite_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    (tmp_path / "corpus").rename(other)
    with pytest.raises(InvalidInput, match="does not exist"):
        load_suite(suite_dir)
    assert load_suite(suite_dir, corpus_dir=other).corpus_dir == other.resolve()
    with pytest.raises(InvalidInput, match="no variant"):
        load_suite(suite_dir, variant="nope", corpus_dir=other)
    with pytest.raises(InvalidInput, match="no suite"):
        load_suite(tmp_path)
    with (suite_dir / "qrels.tsv").open("a") as fh:
        fh.write("q1\talpha.pdf#7\t1\n")
    with pytest.raises(InvalidInput, match=r"alpha\.pdf#7"):
        load_suite(suite_dir, corpus_dir=other)


def test_qrels_formats(tmp_path: Path) -> None:
    trec = tmp_path / "trec.txt"
    trec.write_text("q1 0 d1 2\nq1 0 d2 0\n\nq2 0 d1 1\n")
    assert load_qrels(trec) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}
    bad = tmp_path / "bad.tsv"
    bad.write_text("q1\td1\thigh\n")
    with pytest.raises(InvalidInput, match="integer"):
        load_qrels(bad)


def test_beir_suite_renders_records_to_pdfs(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    records = [
        {"_id": "d1", "title": "Typewriters", "text": "Patented in 1868.\nBy Sholes."},
        {"_id": "d2", "title": "Nuts", "text": "Self-locking nuts " * 400},
    ]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "typewriter"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "suite.yaml").write_text(f"name: b\ndataset:\n  format: beir\n  corpus: {beir}\n")
    suite = load_suite(tmp_path)
    files = suite.documents(tmp_path / "work")
    assert [f.name for f in files] == ["d1.pdf", "d2.pdf"]
    with pymupdf.open(files[0]) as doc:
        assert "1868" in doc[0].get_text()
    with pymupdf.open(files[1]) as doc:
        assert doc.page_count > 1  # long records paginate
    assert suite.doc_key("d2.pdf", 3) == "d2"
    assert suite.qrels == {"q1": {"d1": 1}}


@pytest.mark.skipif(not (REPO.parent / "shared" / "corpus" / "docling").is_dir(), reason="docling corpus absent")
def test_shipped_docling_suite_is_valid() -> None:
    suite = load_suite(DOCLING)  # validates every judged page against the PDFs
    assert len(suite.queries) >= 40
    assert all(any(g >= 1 for g in suite.qrels[q.id].values()) for q in suite.queries)
    tags = {t for q in suite.queries for t in q.tags}
    assert {"text", "table", "figure", "scan"} <= tags
    assert any(g == 1 for judged in suite.qrels.values() for g in judged.values())  # graded
    assert len(suite.qa) >= 10
    assert load_suite(DOCLING, variant="bm25").spec.pipeline.spaces == ["bm25"]


SEC10Q = REPO / "eval" / "suites" / "sec-10q"


def test_document_judging_expands_patterns(suite_dir: Path) -> None:
    (suite_dir / "qrels.tsv").write_text("q1\t*lph*\t1\nq2\tbeta.pdf\t2\nq2\t*.pdf\t1\n")
    yaml_text = (suite_dir / "suite.yaml").read_text().replace("  qa: qa.jsonl\n", "  judge: document\n")
    (suite_dir / "suite.yaml").write_text(yaml_text)
    suite = load_suite(suite_dir)
    assert suite.qrels["q1"] == {"alpha.pdf": 1}
    assert suite.qrels["q2"] == {"alpha.pdf": 1, "beta.pdf": 2, "gamma.pdf": 1}  # highest grade wins
    assert suite.doc_key("sub/alpha.pdf", 2) == "alpha.pdf"  # a page counts for its document
    (suite_dir / "qrels.tsv").write_text("q1\t*2023 Q3 NOPE*\t1\n")
    with pytest.raises(InvalidInput, match="names no document"):
        load_suite(suite_dir)


def test_shipped_sec10q_suite_is_valid() -> None:
    suite = load_suite(SEC10Q)
    assert len(suite.queries) == 195 and suite.spec.dataset.judge == "document"
    assert all(suite.qrels[q.id] for q in suite.queries)
    sizes = {len(suite.qrels[q.id]) for q in suite.queries if "single-doc" in q.tags}
    assert sizes == {1}  # single-document questions name exactly one report
    assert {len(suite.qrels[q.id]) for q in suite.queries if "multi-doc" in q.tags} == {4}
    tags = {t for q in suite.queries for t in q.tags}
    assert {"single-chunk", "multi-chunk", "multi-doc", "table", "text"} <= tags


def test_a_split_keeps_the_queries_judgments_and_qa_of_one_half(suite_dir: Path) -> None:
    rows = [json.loads(line) for line in (suite_dir / "queries.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["split"] = "tune" if i % 2 else "test"
    (suite_dir / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    qa = [json.loads(line) for line in (suite_dir / "qa.jsonl").read_text().splitlines()]
    qa[0]["split"] = "test"
    (suite_dir / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in qa))
    whole, test = load_suite(suite_dir), load_suite(suite_dir, split="test")
    assert [q.id for q in test.queries] == ["q1", "q3", "q5"] and set(test.qrels) == {"q1", "q3", "q5"}
    assert [item.id for item in test.qa] == ["a1"] and len(whole.queries) == 5
    assert test.spec.dataset.split == "test" and whole.spec.dataset.split is None
    spec = (suite_dir / "suite.yaml").read_text()  # ends with its variants
    (suite_dir / "suite.yaml").write_text(spec + "  held-apart:\n    dataset: {split: tune}\n")
    assert [q.id for q in load_suite(suite_dir, variant="held-apart").queries] == ["q2", "q4"]
    assert [q.id for q in load_suite(suite_dir, variant="held-apart", split="test").queries] == ["q1", "q3", "q5"]
    with pytest.raises(InvalidInput, match=r"no query has split 'dev'; allowed: \['test', 'tune'\]"):
        load_suite(suite_dir, split="dev")
