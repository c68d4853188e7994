"""The worker-side stages, shared by the embedded runner and the Celery tasks.

Each stage takes a :class:`Work` (ids only), reads its input from the spool, writes its output
to the spool under a key derived from (job, file, batch) and returns the work to send next.
Re-running a stage overwrites the same output, so redelivery (``acks_late``) and retries are safe.

    plan  (cpu):  count pages, or report the file bad  -> commit + one parse per page batch
    parse (cpu):  render, text layer, OCR of one batch   -> embed   (or commit: file failed)
    embed (gpu):  vectors of one batch's pages           -> write
    write / commit run in the process that owns the store (:mod:`mmrag.jobs.writer`).

Lifecycle: a :class:`StageContext` is built once per worker process (or by the embedded runner)
and used from many threads; it holds no per-job state.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace

from mmrag.config import CorpusConfig, IngestConfig
from mmrag.errors import InvalidInput, Overloaded, Unavailable
from mmrag.indexing import embed_pages
from mmrag.jobs.model import Work
from mmrag.jobs.pages import count_pages, parse_pages, split_images
from mmrag.jobs.spool import Spool
from mmrag.spaces.base import Space
from mmrag.types import Document

log = logging.getLogger(__name__)


@dataclass(slots=True)
class StageContext:
    ingest: IngestConfig
    spool: Spool
    batch_pages: int
    spaces: dict[str, Space] | None = None  # None: this process does not embed (a CPU worker)


def batch_range(batch: int, batch_pages: int, pages: int) -> tuple[int, int]:
    """1-based inclusive page range of ``batch``."""
    first = batch * batch_pages + 1
    return first, min(pages, first + batch_pages - 1)


def failed(work: Work, exc: InvalidInput) -> list[Work]:
    return [Work("commit", work.job_id, work.file, work.batch, {"error": exc.code, "message": exc.message})]


def plan(ctx: StageContext, work: Work) -> list[Work]:
    if ctx.spool.cancelled(work.job_id):
        return []
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    try:
        media_type, pages = count_pages(ctx.spool.blob(m["blob"]), m["filename"], ctx.ingest)
    except InvalidInput as exc:
        return failed(work, exc)
    batches = math.ceil(pages / ctx.batch_pages)
    info = {"pages": pages, "batches": batches, "media_type": media_type, "timings": {"plan": time.perf_counter() - t0}}
    return [Work("commit", work.job_id, work.file, -1, info)] + [
        Work("parse", work.job_id, work.file, b) for b in range(batches)]


def parse(ctx: StageContext, work: Work) -> list[Work]:
    if ctx.spool.cancelled(work.job_id):
        return []
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    data = ctx.spool.blob(m["blob"])
    try:
        _, total = count_pages(data, m["filename"], ctx.ingest)
        first, last = batch_range(work.batch, ctx.batch_pages, total)
        media_type, pages = parse_pages(data, m["document_id"], m["filename"], ctx.ingest, first, last)
    except InvalidInput as exc:
        return failed(work, exc)
    meta, images = split_images(pages)
    ctx.spool.put(work.job_id, work.file, work.batch, "images", images)
    ctx.spool.put(work.job_id, work.file, work.batch, "pages", {"media_type": media_type, "pages": meta})
    return [Work("embed", work.job_id, work.file, work.batch, {"timings": {"parse": time.perf_counter() - t0}})]


def batch_document(spool: Spool, work: Work, with_images: bool) -> Document:
    """The document header from the manifest with one batch's pages (PNGs restored if asked)."""
    m = spool.manifest(work.job_id, work.file)
    parsed = spool.get(work.job_id, work.file, work.batch, "pages")
    pages = parsed["pages"]
    if with_images:
        images = spool.get(work.job_id, work.file, work.batch, "images")
        pages = [replace(p, image_png=png) for p, png in zip(pages, images, strict=True)]
    return Document(id=m["document_id"], filename=m["filename"], media_type=parsed["media_type"],
                    size_bytes=m["size_bytes"], pages=pages, metadata=m["metadata"])


def embed(ctx: StageContext, work: Work) -> list[Work]:
    if ctx.spool.cancelled(work.job_id):
        return []
    assert ctx.spaces is not None, "this worker has no embedders (start it on the gpu queue)"
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    doc = batch_document(ctx.spool, work, with_images=any(
        ctx.spaces[s].needs_image for s in m["spaces"] if s in ctx.spaces))
    corpus_config = CorpusConfig.model_validate(m["corpus_config"]) if "corpus_config" in m else None
    points = embed_pages(doc, ctx.spaces, m["spaces"], ctx.ingest, corpus_config)
    ctx.spool.put(work.job_id, work.file, work.batch, "points", points)
    timings = {**work.info.get("timings", {}), "embed": time.perf_counter() - t0}
    return [Work("write", work.job_id, work.file, work.batch, {"timings": timings})]


WORKER_STAGES = {"plan": plan, "parse": parse, "embed": embed}

TRANSIENT: tuple[type[BaseException], ...] = (Unavailable, Overloaded, ConnectionError, TimeoutError)
"""Errors worth a retry with backoff (the embedding service is busy or restarting, a network blip)."""


def run_stage(ctx: StageContext, work: Work) -> list[Work]:
    """Run a worker stage. A bad file becomes a ``commit`` reporting it; work whose spool input is
    gone (its file failed or its job was cancelled meanwhile) is dropped; TRANSIENT errors propagate
    for the caller's retry policy; any other error fails the file with its reason, and the job goes on."""
    try:
        return WORKER_STAGES[work.stage](ctx, work)
    except InvalidInput as exc:
        return failed(work, exc)
    except FileNotFoundError:
        log.info("dropping stale %s work of job %s file %d", work.stage, work.job_id, work.file)
        return []
    except TRANSIENT:
        raise
    except Exception as exc:
        log.exception("%s of job %s file %d batch %d failed", work.stage, work.job_id, work.file, work.batch)
        return [Work("commit", work.job_id, work.file, work.batch,
                     {"error": "internal_error", "message": f"{work.stage} failed: {type(exc).__name__}: {exc}"})]


def give_up(work: Work, exc: BaseException) -> list[Work]:
    """After the last retry of a transient error: the file fails with the reason."""
    return [Work("commit", work.job_id, work.file, work.batch,
                 {"error": getattr(exc, "code", "unavailable"),
                  "message": f"{work.stage} gave up after retries: {exc}"})]
