"""Distributed mode with real processes: Redis, `mmrag serve` (owns the store, consumes the write
queue), `mmrag embed-serve` and Celery workers (GPU workers embed through the service client).
A worker SIGKILLed mid-job is replaced; the job completes with every page in the store exactly once.
A bad file fails on its own with its reason."""

from __future__ import annotations

import sys
import time

import httpx
import pytest

from mmrag.embed.base import load_embedder
from mmrag.pipeline import build_pipeline
from tests.api.conftest import Server, free_port
from tests.conftest import make_settings
from tests.indexer.conftest import FAKE_ENV, Proc, Workers
from tests.jobs.helpers import encrypted_pdf, points_per_page, unique_pdf, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture()
def embed_service(tmp_path):
    """`mmrag embed-serve` with the fake embedder: GPU workers embed through the service client."""
    port = free_port()
    proc = Proc([sys.executable, "-m", "cli", "embed-serve", "--model", "fake:384", "--port", str(port)],
                tmp_path / "embed.log", FAKE_ENV)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: proc.proc.poll() is not None or _healthy(url), timeout=60)
        assert proc.proc.poll() is None, proc.tail()
        yield url, proc
    finally:
        proc.stop()


def _healthy(url):
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture()
def deployment(tmp_path, redis_url, embed_service):
    env = {**FAKE_ENV, "MMRAG_JOBS__BROKER_URL": redis_url, "MMRAG_JOBS__BATCH_PAGES": "2",
           "MMRAG_JOBS__VISIBILITY_TIMEOUT_S": "6", "MMRAG_JOBS__STALL_S": "15",
           "MMRAG_DATA_DIR": str(tmp_path / "data")}
    workers = Workers(tmp_path, {**env, "MMRAG_EMBED__SERVICE_URL": embed_service[0]})
    server = Server(tmp_path / "data", tmp_path / "server.log", env)
    try:
        yield server, workers
    finally:
        workers.stop_all()
        server.stop()


def job(server, job_id):
    r = httpx.get(f"{server.url}/jobs/{job_id}", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def count_points(data_dir, corpus):
    settings = make_settings(data_dir)
    settings.embed.text_model = "fake:384"
    p = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    try:
        return points_per_page(p.store, corpus), {d.id: d.page_count for d in p.catalog.documents.listed(corpus)}
    finally:
        p.close()


def test_killed_workers_are_replaced_and_every_page_is_stored_once(deployment, embed_service, corpus_dir):
    server, workers = deployment
    cpu, gpu = workers.start("cpu"), workers.start("gpu")
    assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
    pdfs = sorted((corpus_dir / "pdf").glob("*.pdf"))[:6]
    files = [("files", (f"{i}-{p.name}", unique_pdf(p, str(i)))) for i in range(2) for p in pdfs]
    files.append(("files", ("locked.pdf", encrypted_pdf())))
    r = httpx.post(f"{server.url}/corpora/c/documents", files=files, timeout=60)
    assert r.status_code == 202, r.text
    job_id = r.json()["job"]["id"]

    wait_until(lambda: job(server, job_id)["pages_done"] >= 2, timeout=120)
    cpu.kill()  # mid-job: its task is unacknowledged and comes back to the queue
    assert job(server, job_id)["state"] not in ("done", "failed")
    workers.start("cpu")
    time.sleep(1.0)
    gpu.kill()
    workers.start("gpu")
    final = wait_until(lambda: (j := job(server, job_id))["state"] in ("done", "failed") and j, timeout=150)

    assert final["state"] == "done", final
    failed = {e["filename"]: e for e in final["errors"]}
    assert set(failed) == {"locked.pdf"} and "encrypted" in failed["locked.pdf"]["message"]
    assert final["pages_done"] == final["pages_total"] > 0
    assert set(final["timings"]) >= {"plan", "parse", "embed", "write"}
    assert "POST /v1/embeddings" in embed_service[1].tail(100_000)  # GPU workers used the embedding service
    server.stop()
    counts, docs = count_points(server.data_dir, "c")
    assert len(docs) == len(files) - 1
    expected = {(doc, page) for doc, n in docs.items() for page in range(1, n + 1)}
    assert set(counts) == expected, "lost or stray pages"
    assert set(counts.values()) == {1}, "duplicate points"


def test_lost_messages_are_resent_by_the_owner(deployment, redis_url, corpus_dir):
    """A broker that lost its queues (restarted without persistence): the owner notices the job
    stalled and re-sends its pending work from the job state and the spool."""
    import redis

    server, workers = deployment
    r = redis.Redis.from_url(redis_url)
    cpu = workers.start("cpu")  # no gpu worker yet: embed work piles up in the gpu queue
    assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
    pdfs = sorted((corpus_dir / "pdf").glob("*.pdf"))[:4]
    files = [("files", (p.name, unique_pdf(p, "lost"))) for p in pdfs]
    job_id = httpx.post(f"{server.url}/corpora/c/documents", files=files, timeout=60).json()["job"]["id"]
    wait_until(lambda: r.llen("gpu") > 0, timeout=120)
    cpu.kill()
    r.delete("cpu", "gpu", "write", "unacked", "unacked_index")  # every queued and unacknowledged message
    assert job(server, job_id)["pages_done"] < job(server, job_id)["pages_total"]  # work was really lost
    workers.start("cpu"), workers.start("gpu")
    final = wait_until(lambda: (j := job(server, job_id))["state"] in ("done", "failed") and j, timeout=150)
    assert final["state"] == "done" and final["pages_done"] == final["pages_total"], final
    assert "no progress for 15s): re-sending" in (server.data_dir.parent / "server.log").read_text()
    server.stop()
    counts, docs = count_points(server.data_dir, "c")
    assert len(docs) == len(files) and set(counts.values()) == {1}
    assert set(counts) == {(d, p) for d, n in docs.items() for p in range(1, n + 1)}
