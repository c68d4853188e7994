"""Jobs over REST in-process: upload answers 202 with a job; progress events; listing; cancel; 404s."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.embed.base import Item, Kind, load_embedder
from mmrag.pipeline import build_pipeline
from tests.fixtures.fake_embedders import FakeEmbedder
from tests.jobs.helpers import encrypted_pdf, points_per_page, text_pdf, wait_until


@pytest.fixture()
def app_client(settings):
    settings.embed.text_model = "fake:384"
    settings.jobs.batch_pages = 2
    pipeline = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    with TestClient(create_app(settings, pipeline)) as c:
        assert c.post("/corpora", json={"name": "c"}).status_code == 201
        c.pipeline = pipeline  # type: ignore[attr-defined]
        yield c
    pipeline.close()


def events(client, job_id):
    out = []
    with client.stream("GET", f"/jobs/{job_id}/events", params={"interval": 0.05}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                out.append((kind, json.loads(line[6:])))
    return out


def test_upload_starts_a_job_with_progress_events(app_client):
    files = [("files", ("a.pdf", text_pdf("alpha", 5))), ("files", ("locked.pdf", encrypted_pdf())),
             ("files", ("empty.pdf", b""))]
    r = app_client.post("/corpora/c/documents", files=files)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["errors"][0]["filename"] == "empty.pdf" and body["errors"][0]["error"] == "invalid_input"
    job_id = body["job"]["id"]
    assert body["job"]["events_url"].endswith(f"/jobs/{job_id}/events") and len(body["job"]["files"]) == 2
    seen = events(app_client, job_id)
    assert seen[-1] == ("end", {"state": "done"})
    progress = [d for k, d in seen if k == "progress"]
    done = [p["pages_done"] for p in progress]
    assert done == sorted(done) and progress[-1]["pages_done"] == 5 and progress[-1]["pages_total"] == 5
    final = app_client.get(f"/jobs/{job_id}").json()
    assert final["errors"] == [{"filename": "locked.pdf", "error": "corrupt_document",
                                "message": "PDF is encrypted (password protected); upload an unencrypted copy"}]
    assert [f["state"] for f in final["files"]] == ["done", "failed"]
    assert {"plan", "parse", "embed", "write", "optimize"} <= set(final["timings"])  # optimize: the job's end
    assert [j["id"] for j in app_client.get("/corpora/c/jobs").json()] == [job_id]
    again = app_client.post("/corpora/c/documents", files=files[:1], params={"wait": "true"})
    assert again.status_code == 200 and again.json()["documents"][0]["status"] == "exists"


class GatedEmbedder(FakeEmbedder):
    """The fake embedder that lets ``free`` calls through, then holds every page batch until the test
    opens the gate: the job is surely running, with some pages written, when the test acts on it.
    Queries are not held."""

    def __init__(self, free: int) -> None:
        super().__init__(384, False, "fake:384")
        self.free, self.entered, self.gate = free, threading.Event(), threading.Event()

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        if kind == "document":
            self.free -= 1
            if self.free < 0:
                self.entered.set()
                assert self.gate.wait(120), "the test never opened the gate"
        return super().embed_batch(items, kind)


def test_cancel_stops_a_running_job_and_leaves_nothing_of_its_file(settings):
    settings.embed.text_model = "fake:384"
    settings.jobs.batch_pages = 2
    gated = GatedEmbedder(free=4)
    pipeline = build_pipeline(settings, embedders={"text": gated})
    try:
        with TestClient(create_app(settings, pipeline)) as client:
            assert client.post("/corpora", json={"name": "c"}).status_code == 201
            r = client.post("/corpora/c/documents", files=[("files", ("big.pdf", text_pdf("many", 40)))])
            job_id = r.json()["job"]["id"]
            assert gated.entered.wait(60)  # the job is held embedding one of its 20 batches
            wait_until(lambda: pipeline.jobs.status(job_id).pages_done >= 2, timeout=60)  # and has written some
            assert points_per_page(pipeline.store, "c"), "the batches let through are in the store"
            cancelled = client.post(f"/jobs/{job_id}/cancel")
            assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled", cancelled.text
            gated.gate.set()
            pipeline.runner.stop()  # the work in flight ends; what it hands on is dropped or refused
            final = client.get(f"/jobs/{job_id}").json()
            assert final["state"] == "cancelled" and final["files"][0]["state"] == "cancelled", final
            assert client.get("/corpora/c/documents").json() == []
            assert points_per_page(pipeline.store, "c") == {}, "a cancelled file left vectors behind"
            assert [e for e, _ in events(client, job_id)][-1] == "end"  # the stream ends at once: it is finished
    finally:
        gated.gate.set()
        pipeline.close()


def test_unknown_ids_are_404(app_client):
    assert app_client.get("/jobs/nope").status_code == 404
    assert app_client.post("/jobs/nope/cancel").status_code == 404
    assert app_client.get("/jobs/nope/events").status_code == 404
    assert app_client.get("/corpora/nope/jobs").status_code == 404
