"""The owner side of jobs: create them, apply ``commit`` and ``write`` work, finish, cancel, resume.

Runs only in the process that owns the store and the catalog (``mmrag serve``, or ``mmrag worker
write`` with a Qdrant server), so job state, vectors and catalog rows have a single writer.

Crash safety: every effect is idempotent and the state says what is left. A batch's points are
upserted under ids derived from page content (a redo overwrites, never duplicates), then the
batch is recorded as written; a file's catalog row is written once all its batches are; a job
finishes once all its files have. After a crash :meth:`JobWriter.recover` finishes the document
deletions and BM25 re-weights it cut off, and :meth:`JobWriter.pending_work` rebuilds the work
still to do from the job state and the spool: unplanned files are planned again, batches not
written restart from their last stage output found in the spool.

Lifecycle: built by the shell that owns the pipeline; thread-safe: every method that changes job
state (``submit``, ``handle``, ``cancel``, ``recover``, ``pending_work``, ``delete_document``) takes the writer's
own lock, so state transitions are applied one at a time whichever runner calls them.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Concatenate, ParamSpec, TypeVar

from mmrag.catalog import Catalog
from mmrag.errors import NotFound
from mmrag.ingest.ids import document_id
from mmrag.ingest.sniff import sniff_kind
from mmrag.jobs import bm25_stats
from mmrag.jobs.model import FINISHED_FILE, Failed, FileState, JobState, JobStatus, Manifest, Planned, Work
from mmrag.jobs.spool import Spool
from mmrag.jobs.state import JobStore, NewFile
from mmrag.spaces.page_traits import pack_traits, text_traits
from mmrag.store.base import FilterSpec, VectorStore
from mmrag.types import Document

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Upload:
    """A file accepted by the synchronous upload checks (not empty, under the size limit, a known type)."""

    filename: str
    data: bytes
    metadata: dict[str, Any]
    kind: str | None = None  # the kind check_uploaded_file returned (the plan stage trusts it); None: plan checks


def add_document(catalog: Catalog, corpus: str, doc: Document) -> None:
    """Record ``doc`` and its pages in the catalog with what the ranker reads of each page's text
    (:mod:`mmrag.spaces.page_traits`, computed here once instead of at every search that meets the page)."""
    catalog.documents.add(corpus, doc, {p.id: pack_traits(text_traits(p.text, p.context)) for p in doc.pages})


def with_attachments(uploads: list[Upload]) -> list[Upload]:
    """Each email followed by its attachments, as uploads of their own (one level: an attached email
    becomes a document of its body; its own attachments are not unpacked). Attachments carry no kind:
    the plan stage sniffs and checks them (a bad one fails as a file of the job)."""
    out = []
    for up in uploads:
        out.append(up)
        if (up.kind or sniff_kind(up.data, up.filename).name) == "eml":
            from mmrag.ingest.mail import email_attachments  # the converters (pymupdf): only for a mail

            out.extend(Upload(name, data, {**up.metadata, "attachment_of": up.filename})
                       for name, data in email_attachments(up.data, up.filename))
    return out


P = ParamSpec("P")
R = TypeVar("R")


def serialised(method: Callable[Concatenate[JobWriter, P], R]) -> Callable[Concatenate[JobWriter, P], R]:
    """Run the method under the writer's lock (the single-writer rule kept by the writer itself)."""

    @functools.wraps(method)
    def locked(self: JobWriter, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class JobWriter:
    def __init__(self, catalog: Catalog, store: VectorStore, jobs: JobStore, spool: Spool,
                 plan_ahead: int = 4) -> None:
        self.catalog, self.store, self.jobs, self.spool = catalog, store, jobs, spool
        self.plan_ahead = plan_ahead  # files of one job whose plan is sent at once (JobsConfig.plan_ahead)
        self._lock = threading.RLock()  # re-entrant: a serialised method may call another

    # creation ----------------------------------------------------------------------
    @serialised
    def submit(self, corpus: str, uploads: list[Upload]) -> tuple[str, list[Work]]:
        """Spool the bytes, record the job; returns its id and the first work (a plan per new file)."""
        corpus_config = bm25_stats.indexing_config(self.catalog, corpus, self.catalog.corpora.config(corpus))
        spaces = corpus_config.spaces
        job_id = self.jobs.new_id()
        files = []
        for i, up in enumerate(with_attachments(uploads)):
            blob, doc_id = self.spool.put_blob(up.data), document_id(up.data)
            exists = self.catalog.documents.find(corpus, doc_id) is not None
            self.spool.put_manifest(job_id, i, Manifest(corpus, up.filename, doc_id, blob, len(up.data),
                                                        up.metadata, spaces, corpus_config, up.kind))
            state = FileState.EXISTS if exists else FileState.QUEUED
            files.append(NewFile(up.filename, doc_id, blob, len(up.data), state))
        self.jobs.create_job(job_id, corpus, files)
        self._maybe_finish_job(job_id)
        plans = [Work("plan", job_id, i) for i, f in enumerate(files) if f.state == FileState.QUEUED]
        return job_id, plans[:self.plan_ahead]  # each plan's outcome releases the next (_next_plan)

    # applying work -------------------------------------------------------------------
    @serialised
    def handle(self, work: Work) -> list[Work]:
        job = self.jobs.status(work.job_id)
        if job.finished or job.files[work.file].state in FINISHED_FILE:
            return []  # late or redelivered work of a finished/cancelled job or a failed file
        if work.stage == "commit":
            self._commit(job, work)
            return self._next_plan(job, work) if work.batch == -1 else []  # the file's plan has ended
        elif work.stage == "write":
            self._write(job, work)
        else:
            raise ValueError(f"the owner does not run stage {work.stage!r}")
        return []

    def _commit(self, job: JobStatus, work: Work) -> None:
        if isinstance(work.info, Failed):
            self._fail_file(job, work.file, work.info.error, work.info.message)
            return
        if not isinstance(work.info, Planned):
            raise ValueError(f"a commit carries Planned or Failed, not {work.info!r}")
        self.jobs.set_planned(job.id, work.file, work.info.pages, work.info.batches)
        self.jobs.add_timings(job.id, work.timings)
        self._maybe_finish_file(job.id, work.file)

    def _write(self, job: JobStatus, work: Work) -> None:
        t0 = time.perf_counter()
        doc = self.spool.batch_document(job.id, work.file, work.batch, with_images=True)
        points = self.spool.get(job.id, work.file, work.batch, "points")
        self.catalog.pages.save_images(job.corpus, doc.pages, *self.spool.kept_source(job.id, work.file))
        self.store.upsert(job.corpus, points)
        if self.jobs.mark_batch_written(job.id, work.file, work.batch, len(doc.pages)):
            self.jobs.add_timings(job.id, {**work.timings, "write": time.perf_counter() - t0})
        self._maybe_finish_file(job.id, work.file)

    def _next_plan(self, job: JobStatus, work: Work) -> list[Work]:
        """The plan a file's planning releases: the file ``plan_ahead`` places after it among those to plan,
        so one job's files reach the ``cpu`` queue a few at a time (other jobs' files are not queued behind
        all of them, on Celery too)."""
        planable = [f.index for f in job.files if f.state != FileState.EXISTS]
        if work.file not in planable:
            return []
        j = planable.index(work.file) + self.plan_ahead
        if j >= len(planable) or job.files[planable[j]].state != FileState.QUEUED:
            return []
        return [Work("plan", job.id, planable[j])]

    def _fail_file(self, job: JobStatus, file: int, error: str, message: str) -> None:
        f = job.files[file]
        log.info("job %s: %s failed: %s", job.id, f.filename, message)
        self._drop_points(job.corpus, f.document_id)
        self.jobs.set_file_state(job.id, file, FileState.FAILED, error, message)
        self.spool.drop_file(job.id, file)
        self._maybe_finish_job(job.id)

    @serialised
    def delete_document(self, corpus: str, doc_id: str) -> None:
        """The catalog row first (the document is no longer listed), then its vectors, then the BM25 re-weight.
        The deletion is recorded in the job state until it is complete, so one a crash cuts off is finished
        at the next start (:meth:`recover`): a listed document always has all its points, a deleted one none."""
        self.catalog.documents.get(corpus, doc_id)
        self.jobs.add_deletion(corpus, doc_id)
        self._finish_deletion(corpus, doc_id)

    def _finish_deletion(self, corpus: str, doc_id: str) -> None:
        if self.catalog.documents.find(corpus, doc_id) is not None:
            bm25_stats.record_deletion(self.catalog, corpus, doc_id)
            self.catalog.documents.delete(corpus, doc_id)
        self.store.delete(corpus, FilterSpec(match={"document_id": doc_id}))
        bm25_stats.maybe_reweight(self.catalog, self.store, corpus)
        self.jobs.clear_deletion(corpus, doc_id)

    def _drop_points(self, corpus: str, doc_id: str) -> None:
        """Remove vectors of a document that never made it into the catalog (no orphans)."""
        if self.catalog.documents.find(corpus, doc_id) is None:
            self.store.delete(corpus, FilterSpec(match={"document_id": doc_id}))

    # finishing -----------------------------------------------------------------------
    def _maybe_finish_file(self, job_id: str, file: int) -> None:
        job = self.jobs.status(job_id)
        f = job.files[file]
        if f.state != FileState.RUNNING or f.batches_done < f.batches:
            return
        batches = [self.spool.parsed(job_id, file, b) for b in range(f.batches)]
        m = self.spool.manifest(job_id, file)
        doc = Document(id=f.document_id, filename=f.filename, media_type=batches[0].media_type,
                       size_bytes=f.size_bytes, metadata=m.metadata,
                       pages=[replace(p, image_png=None) for b in batches for p in b.pages])
        bm25_stats.record_document(self.catalog, self.store, job.corpus, doc, m.corpus_config)
        add_document(self.catalog, job.corpus, doc)  # the document row last: a listed document is complete
        self.jobs.set_file_state(job_id, file, FileState.DONE)
        self.spool.drop_file(job_id, file)
        self._maybe_finish_job(job_id)

    def _maybe_finish_job(self, job_id: str) -> None:
        job = self.jobs.status(job_id)
        if job.finished or any(f.state not in FINISHED_FILE for f in job.files):
            return
        all_failed = bool(job.files) and all(f.state == FileState.FAILED for f in job.files)
        if self.catalog.corpora.exists(job.corpus):
            # its average moved, or a re-weight a crash cut off (left to this job's end by recover) is due
            reweighted = bm25_stats.maybe_reweight(self.catalog, self.store, job.corpus)
            end: dict[str, float] = {}  # the job's timings reach the metrics (mmrag_stage_seconds)
            if reweighted is not None:
                end["bm25_reweight"] = reweighted.seconds
            if not all_failed:
                t0 = time.perf_counter()
                self.store.optimize(job.corpus)  # indexes and quantised prefetch vectors of the new points
                end["optimize"] = time.perf_counter() - t0
            if end:
                self.jobs.add_timings(job_id, end)
        self.jobs.finish(job_id, JobState.FAILED if all_failed else JobState.DONE)
        self._cleanup(job)

    def _cleanup(self, job: JobStatus) -> None:
        self.spool.drop_job(job.id)
        for f in job.files:
            blob = self.jobs.blob_of(job.id, f.index)
            if not self.jobs.blob_in_use(blob):
                self.spool.drop_blob(blob)

    @serialised
    def cancel(self, job_id: str) -> JobStatus:
        """Stop a job: workers skip its remaining work; finished files stay, unfinished ones leave no vectors."""
        job = self.jobs.status(job_id)
        if job.finished:
            return job
        self.spool.cancel(job_id)
        for f in job.files:
            if f.state not in FINISHED_FILE:
                self._drop_points(job.corpus, f.document_id)
                self.jobs.set_file_state(job_id, f.index, FileState.CANCELLED)
        if self.catalog.corpora.exists(job.corpus):  # the files it finished may move the average
            bm25_stats.maybe_reweight(self.catalog, self.store, job.corpus)
        self.jobs.finish(job_id, JobState.CANCELLED)
        self._cleanup(job)
        return self.jobs.status(job_id)

    # resuming ------------------------------------------------------------------------
    @serialised
    def recover(self) -> list[str]:
        """At the start of the owner: finish what a crash cut off outside jobs, and return the unfinished jobs
        (to resume with :meth:`pending_work`). Deletions begun are finished; a corpus whose BM25 vectors are
        stale or off its average (a re-weight cut off after a job or a deletion) is re-weighted: a no-op on
        corpora that are in order. A corpus with an unfinished job is left to that job's end: re-weighted now,
        it would fix its average from the documents recorded before the crash, and the rest of the job would
        be indexed with that average where a run without the crash uses the whole job's (the kill harness
        found such a ranking)."""
        for corpus, doc_id in self.jobs.deletions():
            if self.catalog.corpora.exists(corpus) and self.store.has_collection(corpus):
                log.warning("finishing the deletion of document %s of corpus %s", doc_id, corpus)
                self._finish_deletion(corpus, doc_id)
            else:
                self.jobs.clear_deletion(corpus, doc_id)
        unfinished = self.jobs.unfinished()
        busy = {self.jobs.status(job_id).corpus for job_id in unfinished}
        for row in self.catalog.corpora.listed():
            if row.name not in busy:  # a corpus with a job cut off is re-weighted at that job's end, as it
                bm25_stats.maybe_reweight(self.catalog, self.store, row.name)  # would have been: not half-way
        return unfinished

    @serialised
    def pending_work(self, job_id: str, *, touch: bool = False) -> list[Work]:
        """The work still to do for an unfinished job, from its state and the spool (after a crash);
        ``touch`` marks the job as progressing now (it is being re-sent)."""
        try:
            job = self.jobs.status(job_id)
        except NotFound:
            return []
        if touch:
            self.jobs.touch(job_id)
        out: list[Work] = []
        plans = 0
        for f in job.files:
            if f.state == FileState.QUEUED:
                if plans < self.plan_ahead:  # the first few; each one's outcome releases the next
                    out.append(Work("plan", job_id, f.index))
                plans += 1
            elif f.state == FileState.RUNNING:
                written = self.jobs.written_batches(job_id, f.index)
                out.extend(self._resume_batch(job_id, f.index, b) for b in range(f.batches) if b not in written)
                if f.batches_done >= f.batches:
                    self._maybe_finish_file(job_id, f.index)
        self._maybe_finish_job(job_id)
        return out

    def _resume_batch(self, job_id: str, file: int, batch: int) -> Work:
        if self.spool.has(job_id, file, batch, "points"):
            return Work("write", job_id, file, batch)
        if self.spool.has(job_id, file, batch, "pages") and self.spool.has(job_id, file, batch, "images"):
            return Work("embed", job_id, file, batch)
        return Work("parse", job_id, file, batch)
