"""The parse worker processes (:class:`mmrag.jobs.parse_pool.ParsePool`): memory limit, crashes, replacement."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from mmrag.config import IngestConfig, JobsConfig
from mmrag.errors import CorruptDocument, TooComplex
from mmrag.jobs import spool_codec
from mmrag.jobs.parse_pool import ParseInterrupted, ParsePool
from mmrag.jobs.parse_worker import ParseRequest
from tests.jobs.helpers import text_pdf
from tests.jobs.hostile_pdfs import nested_xobjects

CLOCK_ONLY = {"max_page_draws": 10**12, "max_page_content_bytes": 10**15}


def _pages(data: bytes, config: IngestConfig, images: bool = False) -> ParseRequest:
    return ParseRequest("pages", data, "pdf", "t.pdf", config, doc_id="d", first=1, last=1, images=images)


def _text(parsed) -> str:
    """The first page's text of a batch a worker parsed (its spool files' bytes)."""
    return str(spool_codec.loads(parsed.pages).pages[0].text)


def _busy_pid(pool: ParsePool) -> int:
    deadline = time.monotonic() + 30
    while not pool._busy and time.monotonic() < deadline:
        time.sleep(0.02)
    return next(iter(pool._busy)).proc.pid


def test_a_worker_that_died_while_idle_is_replaced():
    pool = ParsePool()
    try:
        assert _text(pool.call(_pages(text_pdf("one"), IngestConfig()))).startswith("one")
        for worker in pool._idle:
            os.kill(worker.proc.pid, signal.SIGKILL)
        time.sleep(0.2)
        assert _text(pool.call(_pages(text_pdf("two"), IngestConfig()))).startswith("two")
    finally:
        pool.close()


def test_workers_run_at_the_configured_niceness_and_the_default_yields_to_the_server():
    assert JobsConfig().parse_nice > 0  # the product's default: ingestion yields the cores to queries
    pool = ParsePool(idle=1, nice=7)
    try:
        assert _text(pool.call(_pages(text_pdf("niced"), IngestConfig()))).startswith("niced")
        pid = pool._idle[0].proc.pid
        assert os.getpriority(os.PRIO_PROCESS, pid) == max(7, os.getpriority(os.PRIO_PROCESS, 0))
    finally:
        pool.close()


def test_a_worker_is_replaced_after_max_calls():
    pool = ParsePool(idle=1, max_calls=2)
    try:
        pids = []
        for i in range(5):
            assert _text(pool.call(_pages(text_pdf(f"page {i}"), IngestConfig()))).startswith(f"page {i}")
            pids.append(pool._idle[0].proc.pid if pool._idle and pool._idle[0].calls else None)
        # two calls on a worker, then a fresh one (started idle, so it shows no calls until it takes one)
        assert pids[0] is not None and pids[1] is None and pids[2] is not None and pids[2] != pids[0]
        assert pids[3] is None and pids[4] not in (None, pids[0], pids[2])
    finally:
        pool.close()

    unbounded = ParsePool(idle=1)  # 0: the same worker for every call
    try:
        seen = set()
        for i in range(4):
            unbounded.call(_pages(text_pdf(f"page {i}"), IngestConfig()))
            seen.add(unbounded._idle[0].proc.pid)
        assert len(seen) == 1 and unbounded._idle[0].calls == 4
    finally:
        unbounded.close()


def test_over_the_memory_limit_is_too_complex():
    """A 100-megapixel render (300 MB of RGB) under a 256 MiB address-space limit."""
    pool = ParsePool(memory_mb=256)
    config = IngestConfig(max_page_pixels=100_000_000, dpi=600, ocr=False)
    try:
        with pytest.raises(TooComplex) as caught:
            pool.call(_pages(text_pdf("big"), config, images=True))
        assert "MMRAG_INGEST__PARSE_MEMORY_MB" in caught.value.message
    finally:
        pool.close()


def test_a_crashing_parser_fails_the_file_as_corrupt():
    pool = ParsePool()
    config = IngestConfig(**CLOCK_ONLY)
    try:
        threading.Timer(0.5, lambda: os.kill(_busy_pid(pool), signal.SIGSEGV)).start()
        with pytest.raises(CorruptDocument):
            pool.call(_pages(nested_xobjects(11), config))
    finally:
        pool.close()


def test_close_interrupts_a_call_in_progress():
    pool = ParsePool()
    config = IngestConfig(**CLOCK_ONLY)
    threading.Timer(0.5, lambda: (_busy_pid(pool), pool.close())).start()
    t0 = time.monotonic()
    with pytest.raises(ParseInterrupted):
        pool.call(_pages(nested_xobjects(11), config))
    assert time.monotonic() - t0 < 10 and pool.busy == 0
