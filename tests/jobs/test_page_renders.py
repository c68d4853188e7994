"""Stored pages are rendered on demand in the parse workers, not in the service (issue 42): the page
image is the same PNG the service would have drawn, and a page that takes minutes to draw (a tiny image
drawn 65,536 times through nested forms, whose text is read in milliseconds, so it was ingested) is
stopped by the page clock with a 422 naming the setting while the service goes on answering."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.catalog.page_images import render_in_process
from mmrag.jobs.model import FileState
from mmrag.jobs.writer import Upload
from mmrag.page_render import RenderSpec
from tests.jobs.helpers import text_pdf, wait_until
from tests.jobs.hostile_pdfs import nested_images
from tests.jobs.test_parse_budget import SLACK_S, _busy, _finished, _pipeline

RENDER_S = 8.0  # the page clock here; drawing the slow page takes minutes


def _ingest(p, name: str, data: bytes):
    job_id = p.runner.submit("a", [Upload(name, data, {})])
    job = wait_until(lambda: _finished(p, job_id), timeout=120, every=0.05)
    assert job.files[0].state == FileState.DONE, job.files[0].message
    return p.documents.pages("a", job.files[0].document_id)


def test_a_stored_page_is_drawn_in_a_parse_worker_with_the_same_pixels(settings):
    p = _pipeline(settings, page_timeout_s=RENDER_S, parse_timeout_s=3 * RENDER_S)
    try:
        pages = _ingest(p, "three.pdf", text_pdf("rendered in a worker", 3))
        calls: list[str] = []
        pool_call = p.runner.ctx.parser.call
        p.runner.ctx.parser.call = lambda request, *a, **k: calls.append(request.task) or pool_call(request, *a, **k)
        png = p.documents.page_image("a", pages[1].id)
        assert calls == ["render"]
        pdf = settings.data_dir / "corpora" / "a" / "sources" / f"{pages[1].document_id}.pdf"
        spec = RenderSpec(settings.ingest.dpi, settings.ingest.max_page_pixels)
        assert png == render_in_process(pdf, 2, spec)
    finally:
        p.close()


def test_a_page_too_slow_to_draw_is_a_422_and_the_service_goes_on(settings):
    p = _pipeline(settings, page_timeout_s=RENDER_S, parse_timeout_s=3 * RENDER_S)  # room for a loaded box
    try:
        slow = _ingest(p, "slow.pdf", nested_images(8))
        fine = _ingest(p, "fine.pdf", text_pdf("a plain page"))
        with TestClient(create_app(settings, p)) as client:
            answers: dict[str, object] = {}
            request = threading.Thread(target=lambda: answers.update(
                r=client.get(f"/corpora/a/pages/{slow[0].id}/image")), daemon=True)
            request.start()
            request.join(timeout=3 * RENDER_S + 2 * SLACK_S)  # drawing the page takes minutes
            assert not request.is_alive(), "the render was not stopped by the page clock"
            r = answers["r"]
            assert r.status_code == 422 and r.json()["error"] == "too_complex", r.text
            assert "MMRAG_INGEST__PAGE_TIMEOUT_S" in r.json()["message"] and "rendering page 1" in r.json()["message"]
            assert client.get("/health/live").status_code == 200
            ok = client.get(f"/corpora/a/pages/{fine[0].id}/image")
            assert ok.status_code == 200 and ok.content.startswith(b"\x89PNG"), ok.text
            assert _busy(p) == 0
    finally:
        p.close()
