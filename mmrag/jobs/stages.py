"""The worker-side stages, shared by the embedded runner and the Celery tasks.

Each stage takes a :class:`Work` (ids only), reads its input from the spool, writes its output
to the spool under a key derived from (job, file, batch) and returns the work to send next.
Re-running a stage overwrites the same output, so redelivery (``acks_late``) and retries are safe.

    plan  (cpu):  convert, count pages, read facts,     -> commit + parse of the first page batches
                  or report the file bad
    parse (cpu):  text layer, tables, OCR (render)       -> embed   (or commit: file failed)

The untrusted reading and drawing of plan and parse run in a parse worker process under a time and
memory budget (:mod:`mmrag.jobs.parse_pool`), and a file's calls together under its document's parse
budget (their seconds spooled per batch); conversions stay in their own jail (plan, in this process).
    embed (gpu):  vectors of one batch's pages           -> write + parse of the next batch
    write / commit run in the process that owns the store (:mod:`mmrag.jobs.writer`).

Bounded overlap: plan releases the parse of a file's first ``parse_ahead + 1`` batches, and the embed
of batch n releases the parse of batch n + parse_ahead + 1, so parsing runs ahead of embedding by at
most ``parse_ahead`` batches (the parse of batch n+1 overlaps the embedding of batch n) on either
runner, and the spool holds no more than that many parsed batches waiting per file.

Lifecycle: a :class:`StageContext` is built once per worker process (or by the embedded runner)
and used from many threads; it holds no per-job state.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mmrag.config import IngestConfig, JobsConfig
from mmrag.disk_space import disk_full, no_space
from mmrag.errors import InvalidInput, Overloaded, Unavailable
from mmrag.ingest.page_context import SectionState
from mmrag.ingest.sniff import KINDS
from mmrag.jobs.embedding import embed_pages
from mmrag.jobs.model import Failed, Planned, StageTimings, Work
from mmrag.jobs.parse_pool import DocumentBudget, ParseInterrupted, ParsePool
from mmrag.jobs.parse_worker import ParsedPages, ParseRequest
from mmrag.jobs.spool import Spool
from mmrag.spaces.base import Space

if TYPE_CHECKING:  # the parsers and converters (pymupdf): imported when a stage runs, not by a search
    from mmrag.ingest.source import Source

log = logging.getLogger(__name__)


@dataclass(slots=True)
class StageContext:
    ingest: IngestConfig
    spool: Spool
    batch_pages: int
    spaces: dict[str, Space] | None = None  # None: this process does not embed (a CPU worker)
    parse_ahead: int = 2  # batches of a file parsed ahead of the one being embedded (JobsConfig.parse_ahead)
    parser: ParsePool = field(default_factory=ParsePool)  # where untrusted files are read and drawn (a budget)

    def parse_call(self, work: Work, request: ParseRequest) -> Any:
        """``request`` run in a parse worker; stopped (ParseInterrupted) as soon as the job is cancelled, and
        (TooComplex) when the file's parse calls, this one with those finished before, pass the document's
        budget (``document_parse_timeout_s``). What the call took is spooled for the file's later calls."""
        spent = self.spool.parse_seconds(work.job_id, work.file, but=work.batch)
        t0 = time.monotonic()
        result = self.parser.call(request, cancelled=lambda: self.spool.cancelled(work.job_id),
                                  budget=DocumentBudget(self.ingest.document_parse_timeout_s, spent))
        self.spool.put_parse_seconds(work.job_id, work.file, work.batch, time.monotonic() - t0)
        return result


def batch_range(batch: int, batch_pages: int, pages: int) -> tuple[int, int]:
    """1-based inclusive page range of ``batch``."""
    first = batch * batch_pages + 1
    return first, min(pages, first + batch_pages - 1)


def failed(work: Work, error: str, message: str) -> list[Work]:
    """The file of ``work`` failed: tell the owner (a ``commit`` carrying the reason)."""
    return [Work("commit", work.job_id, work.file, work.batch, Failed(error, message))]


def plan(ctx: StageContext, work: Work) -> list[Work]:
    from mmrag.ingest.source import convert_upload

    if ctx.spool.cancelled(work.job_id):
        return []
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    checked = KINDS[m.kind] if m.kind else None  # the kind the upload checks found (they ran then)
    data = ctx.spool.blob(m.blob)
    kind, converted = convert_upload(data, m.filename, ctx.ingest, checked)  # non-PDF kinds converted once (jail)
    source: Source = ctx.parse_call(work, ParseRequest("source", data, kind.name, m.filename, ctx.ingest, converted))
    ctx.spool.put_source(work.job_id, work.file, source)  # later stages read its kind
    facts = {**m.metadata, "doc": source.facts.as_dict()}  # title/author/dates + entities/periods: catalog + payload
    ctx.spool.put_manifest(work.job_id, work.file, replace(m, metadata=facts))
    batches = math.ceil(source.pages / ctx.batch_pages)
    info = Planned(source.pages, batches, {"plan": time.perf_counter() - t0})
    return [Work("commit", work.job_id, work.file, -1, info)] + [
        Work("parse", work.job_id, work.file, b) for b in range(min(batches, ctx.parse_ahead + 1))]


def carried_sections(ctx: StageContext, work: Work) -> SectionState | None:
    """Where the nearest earlier batch of the file that is parsed already left its section reading (the
    window guarantees the one ``parse_ahead + 1`` back): the batch reads its section paths on from there."""
    for batch in range(work.batch - 1, max(-1, work.batch - ctx.parse_ahead - 2), -1):
        if ctx.spool.has(work.job_id, work.file, batch, "sections"):
            state: SectionState | None = ctx.spool.get(work.job_id, work.file, batch, "sections")
            return state
    return None


def parse(ctx: StageContext, work: Work) -> list[Work]:
    if ctx.spool.cancelled(work.job_id):
        return []
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    source = ctx.spool.source(work.job_id, work.file)
    data = source.pdf or ctx.spool.blob(m.blob)  # pages render from the converted PDF, if there is one
    first, last = batch_range(work.batch, ctx.batch_pages, source.pages)
    if first > source.pages:
        return []  # released by the window (see embed) past the file's last batch
    from mmrag.jobs.pages import needs_images

    request = ParseRequest("pages", data, source.kind, m.filename, ctx.ingest, doc_id=m.document_id, first=first,
                           last=last, images=needs_images(m.spaces, ctx.ingest), media_type=source.media_type,
                           carried=carried_sections(ctx, work))
    parsed: ParsedPages = ctx.parse_call(work, request)
    ctx.spool.put_encoded(work.job_id, work.file, work.batch, "images", parsed.images)
    ctx.spool.put_encoded(work.job_id, work.file, work.batch, "sections", parsed.sections)
    ctx.spool.put_encoded(work.job_id, work.file, work.batch, "pages", parsed.pages)
    timings = {"parse": time.perf_counter() - t0, **parsed.timings}
    return [Work("embed", work.job_id, work.file, work.batch, StageTimings(timings))]


def embed(ctx: StageContext, work: Work) -> list[Work]:
    if ctx.spool.cancelled(work.job_id):
        return []
    if ctx.spaces is None:
        raise Unavailable("this worker has no embedders (start it on the gpu queue)")
    t0 = time.perf_counter()
    m = ctx.spool.manifest(work.job_id, work.file)
    doc = ctx.spool.batch_document(work.job_id, work.file, work.batch, with_images=any(
        ctx.spaces[s].needs_image for s in m.spaces if s in ctx.spaces))
    points = embed_pages(doc, ctx.spaces, m.spaces, ctx.ingest, m.corpus_config)
    ctx.spool.put(work.job_id, work.file, work.batch, "points", points)
    timings = {**work.timings, **doc.timings, "embed": time.perf_counter() - t0}  # doc.timings: embed_<space>
    return [Work("write", work.job_id, work.file, work.batch, StageTimings(timings)),
            Work("parse", work.job_id, work.file, work.batch + ctx.parse_ahead + 1)]  # the window moves on


WORKER_STAGES: dict[str, Callable[[StageContext, Work], list[Work]]] = {"plan": plan, "parse": parse, "embed": embed}

TRANSIENT: tuple[type[BaseException], ...] = (Unavailable, Overloaded, ConnectionError, TimeoutError)
"""Errors worth a retry with backoff (the embedding service is busy or restarting, a network blip)."""


def run_stage(ctx: StageContext, work: Work) -> list[Work]:
    """Run a worker stage. A bad file becomes a ``commit`` reporting it; work whose spool input is
    gone (its file failed or its job was cancelled meanwhile) is dropped; TRANSIENT errors propagate
    for the caller's retry policy; any other error fails the file with its reason, and the job goes on."""
    try:
        return WORKER_STAGES[work.stage](ctx, work)
    except InvalidInput as exc:  # a bad file
        return failed(work, exc.code, exc.message)
    except ParseInterrupted as exc:  # cancelled: dropped; stopping: resumed from the job state at the next start
        log.info("%s of job %s file %d batch %d stopped: %s", work.stage, work.job_id, work.file, work.batch, exc)
        return []
    except FileNotFoundError:
        log.info("dropping stale %s work of job %s file %d", work.stage, work.job_id, work.file)
        return []
    except TRANSIENT:
        raise
    except Exception as exc:
        from mmrag.ingest.mupdf_errors import corrupt_document

        corrupt = corrupt_document(exc)  # MuPDF met damage (open, page load, page tree): the file's fault
        if corrupt is not None:
            return failed(work, corrupt.code, corrupt.message)
        if disk_full(exc):  # the spool's disk: the file fails saying so, the job goes on
            full = no_space(f"writing the {work.stage} output of {work.job_id} file {work.file}")
            return failed(work, full.code, full.message)
        log.exception("%s of job %s file %d batch %d failed", work.stage, work.job_id, work.file, work.batch)
        return failed(work, "internal_error", f"{work.stage} failed: {type(exc).__name__}: {exc}")


def retry_delay(config: JobsConfig, retries: int) -> float:
    """Seconds to wait before retry number ``retries + 1`` of a transient error (exponential backoff)."""
    return float(config.retry_backoff_s * 2**retries)


def give_up(work: Work, exc: BaseException) -> list[Work]:
    """After the last retry of a transient error: the file fails with the reason."""
    return failed(work, getattr(exc, "code", "unavailable"), f"{work.stage} gave up after retries: {exc}")
