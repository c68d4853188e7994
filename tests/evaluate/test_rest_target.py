"""The shipped docling suite (its ``quick`` variant: 2 PDFs, 7 pages) in-process and through the REST
target against a real ``mmrag serve`` (uvicorn subprocess on 127.0.0.1, stopped by PID): both ingest
through the jobs pipeline and give the same metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from mmrag.errors import MMRAGError
from mmrag.evaluate.runner import run_suite
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline
from mmrag.remote_application import RemoteApplication
from mmrag.rest_client import Client
from tests.api.conftest import Server
from tests.conftest import make_settings

pytestmark = pytest.mark.integration
SUITE = Path(__file__).resolve().parents[2] / "eval" / "suites" / "docling"
ENV = {"MMRAG_EMBED__TEXT_MODEL": "st:sentence-transformers/all-MiniLM-L6-v2", "TOKENIZERS_PARALLELISM": "false"}


def numbered_quick_suite(folder: Path) -> Path:
    """The docling suite with a variant ``quick-numbered``: ``quick`` under names like ``report (2).pdf``."""
    shutil.copytree(SUITE, folder)
    spec = yaml.safe_load((folder / "suite.yaml").read_text())
    spec["variants"]["quick-numbered"] = {**spec["variants"]["quick"], "metrics": {"answers": False}}
    spec["variants"]["quick-numbered"]["dataset"] = {**spec["variants"]["quick"]["dataset"], "file_names": "numbered"}
    scoped = [{**json.loads(line), "scope": {"documents": ["multi_page.pdf"], "pages": {"first": 2, "last": 4}}}
              for line in (folder / "quick-queries.jsonl").read_text().splitlines()]  # within one document's pages
    (folder / "quick-scoped-queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in scoped))
    spec["variants"]["quick-scoped"] = {**spec["variants"]["quick"], "metrics": {"answers": False}}
    spec["variants"]["quick-scoped"]["dataset"] = {**spec["variants"]["quick"]["dataset"],
                                                   "queries": "quick-scoped-queries.jsonl"}
    (folder / "suite.yaml").write_text(yaml.safe_dump(spec))
    return folder


def scoped_hits(run: Path) -> set[tuple[str, int]]:
    rows = [json.loads(line) for line in (run / "queries.jsonl").read_text().splitlines()]
    return {(hit["doc"].partition("#")[0], hit["page"]) for row in rows for hit in row["ranking"]}


def test_docling_suite_gives_the_same_metrics_in_process_and_over_rest(tmp_path: Path, minilm, corpus_dir) -> None:
    suite = load_suite(SUITE, variant="quick", corpus_dir=corpus_dir)
    numbered = load_suite(numbered_quick_suite(tmp_path / "suite"), variant="quick-numbered", corpus_dir=corpus_dir)
    scoped = load_suite(tmp_path / "suite", variant="quick-scoped", corpus_dir=corpus_dir)
    pipeline = build_pipeline(make_settings(tmp_path / "local"), embedders={"text": minilm})
    try:
        local = run_suite(suite, pipeline, tmp_path / "local-run", answers=True, plots=False)
        jobs = pipeline.jobs.list_jobs(suite.corpus_name)
        local_numbered = run_suite(numbered, pipeline, tmp_path / "local-numbered", plots=False)
        local_scoped = run_suite(scoped, pipeline, tmp_path / "local-scoped", plots=False)
    finally:
        pipeline.close()
    assert len(jobs) == 1 and jobs[0].pages_done == 7  # in-process evaluation ingested through one job

    server = Server(tmp_path / "rest", tmp_path / "server.log", ENV)
    target = RemoteApplication(Client(server.url, timeout_s=300.0), job_timeout_s=300.0)
    try:
        rest_numbered = run_suite(numbered, target, tmp_path / "rest-numbered", plots=False)
        listed = sorted(d["filename"] for d in target.client.documents(numbered.corpus_name))
        rest = run_suite(suite, target, tmp_path / "rest-run", plots=False)
        rest_scoped = run_suite(scoped, target, tmp_path / "rest-scoped", plots=False)
        again = target.prepare(suite.corpus_name, suite.documents(tmp_path), lambda *_: None)
        fake = tmp_path / "fake.png"
        fake.write_bytes(b"text, not an image")
        with pytest.raises(MMRAGError, match=r"fake\.png"):  # refused by the server: fails at once, saying which
            target.prepare(suite.corpus_name, [fake], lambda *_: None)
    finally:
        target.close()
        server.stop()

    assert local.data["failures"] == {"search": 0, "answer": 0} and local.metrics["ndcg@5"] > 0.5
    assert rest.metrics == pytest.approx(local.metrics)
    # under numbered names: the same copies go to the server as to the in-process jobs, judged by their bytes
    assert numbered.corpus_name == "eval-docling-quick-numbered" and listed == ["report (1).pdf", "report (2).pdf"]
    assert rest_numbered.metrics == pytest.approx(local_numbered.metrics) and local_numbered.metrics["ndcg@5"] > 0.5
    # a per-query scope (one document, pages 2..4) reaches the search in-process and over REST alike
    assert scoped_hits(tmp_path / "local-scoped") == scoped_hits(tmp_path / "rest-scoped")
    assert {doc for doc, _ in scoped_hits(tmp_path / "rest-scoped")} == {"multi_page.pdf"}
    assert {page for _, page in scoped_hits(tmp_path / "rest-scoped")} == {2, 3, 4}
    assert rest_scoped.metrics == pytest.approx(local_scoped.metrics)
    assert rest.data["ingest"]["pages"] == local.data["ingest"]["pages"] == 7
    assert rest.data["answer_modes"] == local.data["answer_modes"] == {"extractive": len(suite.qa)}
    assert rest.data["config"]["target"] == f"api {server.url}"
    assert again["uploaded"] == 0  # the corpus (409) and its documents were already there
    assert f"POST /corpora/{suite.corpus_name}/documents" in (tmp_path / "server.log").read_text()
