"""Suites under other file names (``dataset.file_names``): sec-10q's judgments stay on the same bytes
under hashed and numbered names, the runner ingests only the new names (in-process, through the real
ingestion jobs: nothing of the old name is stored), and a renamed run pairs with the named one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmrag.errors import InvalidInput
from mmrag.evaluate.compare import compare_reports
from mmrag.evaluate.renaming import content_hash, new_names
from mmrag.evaluate.runner import run_suite
from mmrag.evaluate.suite import list_documents, load_suite
from tests.evaluate.conftest import FakePipeline, write_pdf

SEC10Q = Path(__file__).resolve().parents[2] / "eval" / "suites" / "sec-10q"


@pytest.mark.parametrize("mode", ["hashed", "numbered"])
def test_sec10q_judgments_stay_on_the_same_bytes(mode: str, tmp_path: Path) -> None:
    named, renamed = load_suite(SEC10Q), load_suite(SEC10Q, variant=mode)
    real = {p.name: p for p in list_documents(named.corpus_dir, named.spec.dataset.include)}
    back = {new: old for old, new in renamed.names.items()}
    assert sorted(back.values()) == sorted(real) and len(back) == 20
    assert renamed.corpus_name == f"eval-sec-10q-{mode}" != named.corpus_name
    for qid, judged in named.qrels.items():  # the same documents at the same grades, by their new names
        assert {back[name]: grade for name, grade in renamed.qrels[qid].items()} == judged
    staged = renamed.documents(tmp_path / "work", tmp_path / "scratch")
    assert [p.name for p in staged] == sorted(back) and not (tmp_path / "work").exists()
    for path in staged:
        assert content_hash(path) == content_hash(real[back[path.name]])  # each new name holds its old bytes
        assert not any(part in path.name for part in Path(back[path.name]).stem.split()), path.name
    if mode == "hashed":
        assert all(name == content_hash(real[old])[:16] + ".pdf" for name, old in back.items())
    else:
        assert set(back) == {f"report ({n}).pdf" for n in range(1, 21)}
        assert [renamed.names[old] for old in sorted(real)] != sorted(back, key=lambda n: int(n[8:-5]))


def test_identical_bytes_cannot_be_renamed_apart(tmp_path: Path) -> None:
    write_pdf(tmp_path / "a.pdf", ["same"])
    (tmp_path / "b.pdf").write_bytes((tmp_path / "a.pdf").read_bytes())
    with pytest.raises(InvalidInput, match="same bytes"):
        new_names([tmp_path / "a.pdf", tmp_path / "b.pdf"], "hashed")


def test_a_renamed_run_ingests_only_the_new_names_and_pairs_with_the_named_run(suite_dir: Path,
                                                                              tmp_path: Path) -> None:
    spec = (suite_dir / "suite.yaml").read_text()
    (suite_dir / "suite.yaml").write_text(spec + "  numbered:\n    dataset: {file_names: numbered}\n")
    named_suite, numbered_suite = load_suite(suite_dir), load_suite(suite_dir, variant="numbered")
    assert numbered_suite.qa[0].evidence == [f"{numbered_suite.names['alpha.pdf']}#1"]
    fake = FakePipeline()
    named = run_suite(named_suite, FakePipeline(), tmp_path / "named", plots=False)
    numbered = run_suite(numbered_suite, fake, tmp_path / "numbered", plots=False)
    assert sorted(fake.ingested) == ["report (1).pdf", "report (2).pdf", "report (3).pdf"]
    rows = [json.loads(line) for line in (tmp_path / "numbered" / "queries.jsonl").read_text().splitlines()]
    assert all(key.startswith("report (") for row in rows for key in row["judgments"])
    assert not list(tmp_path.glob("**/numbered-names"))  # the renamed copies lived only through the ingest
    assert numbered.data["suite"]["dataset"]["file_names"] == "numbered"
    assert compare_reports(named, numbered, samples=200)["paired_items"] == 5


def test_the_real_pipeline_stores_nothing_of_the_old_names(tmp_path: Path, pipeline) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_pdf(corpus / "2023 Q3 AAPL.pdf", ["Apple Inc. quarterly report", "net sales of iPhone"])
    write_pdf(corpus / "2023 Q3 MSFT.pdf", ["Microsoft Corporation quarterly report"])
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "iPhone net sales"}) + "\n")
    (folder / "qrels.tsv").write_text("q1\t*AAPL*\t1\n")
    (folder / "suite.yaml").write_text(
        f"name: leak\ndataset:\n  corpus: {corpus}\n  judge: document\n  file_names: hashed\n"
        "pipeline:\n  spaces: [bm25]\n  top_k: 5\nmetrics:\n  k: [1]\n  primary: ndcg@1\n")
    suite = load_suite(folder)
    report = run_suite(suite, pipeline, tmp_path / "run", plots=False)
    assert report.metrics["success@1"] == 1.0  # found by its content, judged by its bytes
    stored = pipeline.catalog.documents.listed(suite.corpus_name)
    assert sorted(d.filename for d in stored) == sorted(suite.names.values())
    facts = pipeline.catalog.documents.facts(suite.corpus_name)  # what the document stage reads
    dumped = json.dumps([[d.filename, d.metadata] for d in stored] + [[d.filename, str(d.facts)] for d in facts],
                        default=str)
    assert "AAPL" not in dumped and "MSFT" not in dumped and "Q3" not in dumped
