"""Issue 28, a real `mmrag serve`: SIGTERM while a one-page bomb is being drawn ends the process within
a few seconds (before: "Application shutdown complete", then alive until the parse ended), and the
unfinished job resumes at the next start."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.api.conftest import Server
from tests.indexer.conftest import FAKE_ENV
from tests.indexer.test_distributed import job
from tests.jobs.helpers import wait_until
from tests.jobs.hostile_pdfs import nested_xobjects

pytestmark = pytest.mark.integration

EXIT_S = 10.0  # "a few seconds", on a loaded box; the bomb alone draws for ~40 s here
CLOCK_ONLY = {"MMRAG_INGEST__MAX_PAGE_DRAWS": str(10**12), "MMRAG_INGEST__MAX_PAGE_CONTENT_BYTES": str(10**15)}


def test_sigterm_during_a_bomb_exits_within_seconds_and_the_job_resumes(tmp_path):
    env = {**FAKE_ENV, **CLOCK_ONLY, "MMRAG_INGEST__PARSE_TIMEOUT_S": "600", "MMRAG_INGEST__PAGE_TIMEOUT_S": "600"}
    server = Server(tmp_path / "data", tmp_path / "server.log", env)
    try:
        assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
        r = httpx.post(f"{server.url}/corpora/c/documents", files=[("files", ("bomb.pdf", nested_xobjects(11)))],
                       timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job"]["id"]
        time.sleep(3.0)  # the plan stage is drawing the page
        t0 = time.monotonic()
        server.proc.terminate()
        try:
            server.proc.wait(timeout=EXIT_S)
        except Exception:
            pytest.fail(f"mmrag serve still alive {EXIT_S:.0f}s after SIGTERM while parsing")
        exit_s = time.monotonic() - t0
        print(f"mmrag serve exited {exit_s:.2f}s after SIGTERM")
        assert exit_s < EXIT_S
    finally:
        server.stop()
    # restarted with a small budget: the job resumes and the bomb fails as too complex
    env.update({"MMRAG_INGEST__PARSE_TIMEOUT_S": "3", "MMRAG_INGEST__PAGE_TIMEOUT_S": "2"})
    server = Server(tmp_path / "data", tmp_path / "server.log", env)
    try:
        final = wait_until(lambda: (j := job(server, job_id))["state"] in ("done", "failed") and j, timeout=90)
        assert final["files"][0]["error"] == "too_complex", final
    finally:
        server.stop()
    assert "resuming job" in (tmp_path / "server.log").read_text()
