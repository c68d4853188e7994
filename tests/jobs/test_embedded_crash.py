"""Embedded mode, real process: `mmrag serve` (no broker) SIGKILLed mid-job and restarted on the
same data folder resumes the job; every page ends up in the store exactly once."""

from __future__ import annotations

import httpx
import pytest

from tests.api.conftest import Server
from tests.indexer.conftest import FAKE_ENV
from tests.indexer.test_distributed import count_points, job
from tests.jobs.helpers import unique_pdf, wait_until

pytestmark = pytest.mark.integration


def test_killed_server_resumes_the_job(tmp_path, corpus_dir):
    env = {**FAKE_ENV, "MMRAG_JOBS__BATCH_PAGES": "2"}
    server = Server(tmp_path / "data", tmp_path / "server.log", env)
    try:
        assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
        pdfs = sorted((corpus_dir / "pdf").glob("*.pdf"))[:6]
        files = [("files", (f"{i}-{p.name}", unique_pdf(p, str(i)))) for i in range(2) for p in pdfs]
        r = httpx.post(f"{server.url}/corpora/c/documents", files=files, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job"]["id"]
        wait_until(lambda: job(server, job_id)["pages_done"] >= 4, timeout=120)
        server.kill()
        server = Server(tmp_path / "data", tmp_path / "server.log", env)
        assert job(server, job_id)["state"] == "running"  # state survived the crash
        final = wait_until(lambda: (j := job(server, job_id))["state"] in ("done", "failed") and j, timeout=150)
        assert final["state"] == "done" and not final["errors"], final
        assert final["pages_done"] == final["pages_total"] > 0
    finally:
        server.stop()
    assert "resuming job" in (tmp_path / "server.log").read_text()
    counts, docs = count_points(tmp_path / "data", "c")
    assert len(docs) == len(files)
    expected = {(doc, page) for doc, n in docs.items() for page in range(1, n + 1)}
    assert set(counts) == expected, "lost or stray pages"
    assert set(counts.values()) == {1}, "duplicate points"
