"""Parse and embed overlap on Celery, within the window: with real Redis, `mmrag serve` (the owner) and
separate CPU and GPU workers, the parse of the next batches runs while batch 0 embeds (the GPU worker's
embedder holds batch 0 until the spool shows them), and none beyond ``parse_ahead``."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.api.conftest import Server
from tests.fixtures.fake_embedders import BACKENDS
from tests.fixtures.gate_embedder import BACKENDS as GATE
from tests.indexer.conftest import FAKE_ENV, Workers
from tests.jobs.helpers import text_pdf, wait_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("ahead", [1, 2])
def test_celery_workers_parse_ahead_of_the_embedding_batch(tmp_path, redis_url, ahead):
    data = tmp_path / "data"
    env = {**FAKE_ENV, "MMRAG_EMBED__BACKENDS": json.dumps({**BACKENDS, **GATE}), "MMRAG_EMBED__TEXT_MODEL": "gate:384",
           "MMRAG_JOBS__BROKER_URL": redis_url, "MMRAG_JOBS__BATCH_PAGES": "1",
           "MMRAG_JOBS__PARSE_AHEAD": str(ahead), "MMRAG_TEST_GATE_AHEAD": str(ahead), "MMRAG_DATA_DIR": str(data)}
    workers = Workers(tmp_path, env)
    server = Server(data, tmp_path / "server.log", env)
    try:
        workers.start("cpu"), workers.start("gpu")
        assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
        r = httpx.post(f"{server.url}/corpora/c/documents", files=[("files", ("six.pdf", text_pdf("gate", 6)))],
                       timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job"]["id"]
        final = wait_until(lambda: (j := httpx.get(f"{server.url}/jobs/{job_id}", timeout=10).json())["state"]
                           in ("done", "failed") and j, timeout=150)
        assert final["state"] == "done" and final["pages_done"] == 6, final
        # when batch 0 was embedding: batches 0..ahead parsed (the gate waited for batch `ahead`), no more
        assert json.loads((data / "gate.json").read_text()) == {"parsed": list(range(ahead + 1))}
    finally:
        workers.stop_all()
        server.stop()
