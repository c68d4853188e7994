"""Issue 28: a hostile PDF costs its own budget, not everyone's time.

Each attack is a few KB made here (``hostile_pdfs``); without the budget each takes tens of seconds of
CPU in the service. Bounds are relative to the small budgets set here, never absolute speeds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mmrag.embed.base import load_embedder
from mmrag.jobs.model import FileState, JobState
from mmrag.jobs.writer import Upload
from mmrag.pipeline import build_pipeline
from tests.conftest import make_settings
from tests.jobs.helpers import text_pdf, unique_pdf, wait_until
from tests.jobs.hostile_pdfs import nested_xobjects, shared_stream

PAGE_S, CALL_S = 2.0, 4.0  # the budgets of these tests
SLACK_S = 15.0  # a worker's start-up and a loaded 2-core box; still well under the attacks' own time
CLOCK_ONLY = {"max_page_draws": 10**12, "max_page_content_bytes": 10**15}  # only the parse clock stops them


def _pipeline(settings, **ingest):
    settings.jobs.batch_pages = 4
    settings.embed.text_model = "fake:384"
    settings.ingest = settings.ingest.model_copy(update={"page_timeout_s": PAGE_S, "parse_timeout_s": CALL_S,
                                                         **ingest})
    p = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    for name in ("a", "b"):
        p.corpora.create_corpus(name)
    return p


def _finished(p, job_id):
    job = p.jobs.status(job_id)
    return job if job.finished else None


def _ingest_timed(p, corpus, name, data, timeout):
    t0 = time.monotonic()
    job_id = p.runner.submit(corpus, [Upload(name, data, {})])
    job = wait_until(lambda: _finished(p, job_id), timeout=timeout, every=0.05)
    return job, time.monotonic() - t0


@pytest.mark.parametrize("limits", ["checked", "clock"])
@pytest.mark.parametrize("attack", ["nested_xobjects", "shared_stream"])
def test_a_drawing_bomb_fails_too_complex_within_its_budget(settings, attack, limits):
    """Nested forms (4**11 draws, 3 KB: ~40 s to draw here) and eight pages of one 128 MiB stream (~20 s)
    fail ``too_complex`` up front (``checked``) or when their clock runs out (``clock``)."""
    data = nested_xobjects(11) if attack == "nested_xobjects" else shared_stream(8, 128)
    p = _pipeline(settings, **(CLOCK_ONLY if limits == "clock" else {}))
    try:
        job, seconds = _ingest_timed(p, "a", f"{attack}.pdf", data, timeout=3 * CALL_S + 2 * SLACK_S)
        f = job.files[0]
        assert (f.state, f.error) == (FileState.FAILED, "too_complex"), (f.state, f.error, f.message)
        setting = ("MAX_PAGE_DRAWS" if attack == "nested_xobjects" else "MAX_PAGE_CONTENT_BYTES") \
            if limits == "checked" else "TIMEOUT_S"
        assert setting in (f.message or ""), f.message
        assert seconds < 2 * CALL_S + SLACK_S, f"{seconds:.1f}s for a budget of {CALL_S}s"
    finally:
        p.close()


def test_another_corpus_is_not_held_up_by_a_bomb(settings):
    """The bomb in corpus a runs to its clock; a one-page upload to corpus b, sent after it, is done first
    (before the change: b's plan and parse queued behind a's, first come first served)."""
    p = _pipeline(settings, **CLOCK_ONLY)
    try:
        bomb = p.runner.submit("a", [Upload("bomb.pdf", nested_xobjects(11), {})])
        time.sleep(0.5)
        small, small_s = _ingest_timed(p, "b", "small.pdf", text_pdf("small"), timeout=3 * CALL_S + 2 * SLACK_S)
        assert small.state == JobState.DONE and _finished(p, bomb) is None, "the bomb finished before the upload"
        assert small_s < CALL_S + SLACK_S
        bomb_job = wait_until(lambda: _finished(p, bomb), timeout=3 * CALL_S + 2 * SLACK_S)
        assert bomb_job.files[0].error == "too_complex"
    finally:
        p.close()


def test_cancel_stops_a_one_page_bomb_mid_page(settings):
    """Cancel kills the parse in progress: the corpus's next upload is not kept waiting for the bomb
    (its budget here is minutes) and no parse worker is left busy."""
    p = _pipeline(settings, **CLOCK_ONLY, page_timeout_s=600.0, parse_timeout_s=600.0)
    try:
        bomb = p.runner.submit("a", [Upload("bomb.pdf", nested_xobjects(11), {})])
        time.sleep(3.0)  # the plan stage is drawing the page
        t0 = time.monotonic()
        assert _busy(p) == 1, "the bomb is not being parsed"
        assert p.runner.cancel(bomb).state == JobState.CANCELLED
        # ~0.03 s (the worker's poll interval is 0.1 s). The cancel mark must outlive the job's spool folder,
        # which the writer drops at once: when it did not, the parse went on until the worker ran out of memory
        wait_until(lambda: _busy(p) == 0, timeout=1.5, every=0.02)
        stopped_s = time.monotonic() - t0
        print(f"the bomb's parse stopped {stopped_s:.2f}s after the cancel")
        small, small_s = _ingest_timed(p, "a", "small.pdf", text_pdf("after"), timeout=4 * SLACK_S)
        assert small.state == JobState.DONE and small_s < SLACK_S, f"{small_s:.1f}s behind a cancelled bomb"
        assert stopped_s < 1.5
    finally:
        p.close()


def _busy(p) -> int:
    """Parse workers running a call now."""
    return int(p.runner.ctx.parser.busy)


def test_over_rest_a_bomb_is_a_422_too_complex_naming_its_setting(settings):
    """The file fails alone, reported like the other per-file failures (422, its code and its setting)."""
    from fastapi.testclient import TestClient

    from api.app import create_app

    p = _pipeline(settings)
    try:
        with TestClient(create_app(settings, p)) as client:
            alone = client.post("/corpora/a/documents", files=[("files", ("bomb.pdf", nested_xobjects(12)))],
                                params={"wait": "true"})
            assert alone.status_code == 422 and alone.json()["errors"][0]["error"] == "too_complex", alone.text
            files = [("files", ("bomb2.pdf", nested_xobjects(12) + b"%2")), ("files", ("ok.pdf", text_pdf("fine")))]
            r = client.post("/corpora/a/documents", files=files, params={"wait": "true"})
            assert r.status_code == 201, r.text  # the other file is indexed: as with a corrupt file beside it
            job = r.json()["job"]
            errors = {e["filename"]: e for e in job["errors"]}
            assert errors["bomb2.pdf"]["error"] == "too_complex", errors
            assert "MMRAG_INGEST__MAX_PAGE_DRAWS" in errors["bomb2.pdf"]["message"]
            assert {f["filename"]: f["state"] for f in job["files"]}["ok.pdf"] == "done"
    finally:
        p.close()


FILING = Path(__file__).resolve().parents[3] / "shared/corpus/filings/pdf/3M_2018_10K.pdf"  # 160 pages


def test_a_document_past_its_total_parse_budget_fails_alone(settings, tmp_path):
    """A real 160-page filing parsed in 40 batches of 4 pages: each call is far under its own clock, but
    with a document budget of half what its whole parse took the file fails ``too_complex`` part-way,
    naming the setting; the small file beside it in the job and the corpus's next upload are indexed, and
    no parse worker is left busy."""
    p = _pipeline(settings, page_timeout_s=600.0, parse_timeout_s=600.0)
    try:
        clean, _ = _ingest_timed(p, "b", "filing.pdf", unique_pdf(FILING, "clean"), timeout=600)
        assert clean.state == JobState.DONE and clean.files[0].pages == 160
        total_s = clean.timings["plan"] + clean.timings["parse"]
    finally:
        p.close()
    p = _pipeline(make_settings(tmp_path / "budget"), page_timeout_s=600.0, parse_timeout_s=600.0,
                  document_parse_timeout_s=total_s / 2)
    try:
        job_id = p.runner.submit("a", [Upload("filing.pdf", unique_pdf(FILING, "budget"), {}),
                                       Upload("small.pdf", text_pdf("beside the filing"), {})])
        job = wait_until(lambda: _finished(p, job_id), timeout=600, every=0.1)
        filing, small = job.files
        assert (filing.state, filing.error) == (FileState.FAILED, "too_complex"), (filing.state, filing.message)
        assert "MMRAG_INGEST__DOCUMENT_PARSE_TIMEOUT_S" in filing.message and "in all" in filing.message
        assert "stopped at reading the document" not in filing.message, filing.message  # batches were counted
        assert small.state == FileState.DONE
        wait_until(lambda: _busy(p) == 0, timeout=60, every=0.05)
        after, _ = _ingest_timed(p, "a", "after.pdf", text_pdf("after the filing"), timeout=120)
        assert after.state == JobState.DONE
    finally:
        p.close()


def test_a_spent_budget_refuses_the_call_before_a_worker_starts():
    from mmrag.config import IngestConfig
    from mmrag.errors import TooComplex
    from mmrag.jobs.parse_pool import DocumentBudget, ParsePool
    from mmrag.jobs.parse_worker import ParseRequest

    pool = ParsePool(idle=0)
    try:
        request = ParseRequest("pages", text_pdf("x"), "pdf", "x.pdf", IngestConfig(), doc_id="d", first=5, last=8)
        with pytest.raises(TooComplex, match="DOCUMENT_PARSE_TIMEOUT_S") as caught:
            pool.call(request, budget=DocumentBudget(limit_s=10.0, spent_s=10.5))
        assert caught.value.detail == {"limit": "document_parse_timeout_s", "seconds": 10.0}
        assert "pages 5-8" in caught.value.message and pool.busy == 0
    finally:
        pool.close()
