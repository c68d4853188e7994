"""The embedded job runner: the stage code on worker threads, no broker.

Three in-memory queues mirror the Celery queues: ``cpu`` (plan, parse) and ``gpu`` (embed) run
on ``cpu_workers + 1`` / ``embed_workers`` threads; ``write`` (write, commit) runs on one thread, the
single writer of the store, catalog and job state. Every queue serves corpora in turn
(:class:`~mmrag.jobs.fair_queue.FairQueue`); one corpus holds at most ``cpu_workers`` parse threads,
so the extra one is always there for the others (a file that takes its whole parse budget delays no
one else). Within a corpus, parses go before plans, so a job of many files starts embedding its first
file while the others are still to plan; the stages' window (:mod:`mmrag.jobs.stages`) keeps parsing at most
``parse_ahead`` batches ahead of embedding. torch's threads are set once (``embed_threads``).
Queues are not durable: the job state and the spool are, and :meth:`LocalRunner.start` re-sends
the pending work of every unfinished job, so a job resumes after a restart (even after SIGKILL).

Lifecycle: ``start()`` once the pipeline is built (resumes unfinished jobs), ``submit``/``cancel``
from any thread, ``stop()`` before the pipeline closes (work in flight is redone after a restart).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from mmrag.config import JobsConfig, Settings
from mmrag.disk_space import disk_full, no_space
from mmrag.embed.threads import set_torch_threads
from mmrag.errors import Unavailable
from mmrag.jobs.fair_queue import FairQueue
from mmrag.jobs.model import Failed, JobStatus, Work
from mmrag.jobs.retry_later import RetryLater, unrecorded_failure
from mmrag.jobs.stages import TRANSIENT, StageContext, failed, give_up, retry_delay, run_stage
from mmrag.jobs.writer import JobWriter, Upload

log = logging.getLogger(__name__)


class JobRunner(Protocol):
    """What the shells use: the embedded :class:`LocalRunner` or the Celery-backed runner in ``indexer/``."""

    def start(self) -> None: ...
    def stop(self, timeout: float = 30.0) -> None: ...
    def submit(self, corpus: str, uploads: list[Upload]) -> str: ...
    def cancel(self, job_id: str) -> JobStatus: ...


RunnerFactory = Callable[[JobWriter, StageContext, Settings], JobRunner]
"""How the composition root builds a process's runner from the job writer, the stage context and settings."""


class LocalRunner:
    def __init__(self, ctx: StageContext, writer: JobWriter, config: JobsConfig) -> None:
        self.ctx, self.writer, self.config = ctx, writer, config
        # cpu: one thread more than a corpus may hold, so another corpus's files never wait behind it
        self.queues = {"cpu": FairQueue(config.cpu_workers), "gpu": FairQueue(), "write": FairQueue()}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._corpus_of: dict[str, str] = {}  # job id -> its corpus (the queues' turns)
        self.later = RetryLater(self.send, config.retry_backoff_s)  # failures a full disk kept from being recorded

    def start(self) -> None:
        if self.config.embed_threads and self.ctx.spaces is not None:
            set_torch_threads(self.config.embed_threads)
        self.ctx.parser.warm(self.ctx.parser.idle)  # importing now, not at the first job (lives with this thread)
        counts = {"cpu": self.config.cpu_workers + 1, "gpu": self.config.embed_workers, "write": 1}
        for name, n in counts.items():
            for i in range(n):
                t = threading.Thread(target=self._loop, args=(name,), name=f"mmrag-jobs-{name}-{i}", daemon=True)
                t.start()
                self._threads.append(t)
        for job_id in self.writer.recover():
            work = self.writer.pending_work(job_id)
            log.warning("resuming job %s: %d work items", job_id, len(work))
            self.send(work)

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self.later.stop()
        self.ctx.parser.close()  # parses in progress stop now (their work resumes at the next start)
        for name, q in self.queues.items():
            for _ in range(sum(t.name.startswith(f"mmrag-jobs-{name}-") for t in self._threads)):
                q.stop()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    # the dispatcher ------------------------------------------------------------------
    def send(self, work: list[Work]) -> None:
        for w in work:
            self.queues[w.queue].put(w, self._corpus(w.job_id))

    def _corpus(self, job_id: str) -> str:
        corpus = self._corpus_of.get(job_id)
        if corpus is None:
            if len(self._corpus_of) > 10_000:
                self._corpus_of.clear()
            corpus = self._corpus_of[job_id] = self.writer.jobs.status(job_id).corpus
        return corpus

    def submit(self, corpus: str, uploads: list[Upload]) -> str:
        if not self._threads:
            raise Unavailable("this process does not run ingestion jobs (its pipeline was built with "
                              "run_jobs=False)")
        job_id, work = self.writer.submit(corpus, uploads)
        self.send(work)
        return job_id

    def cancel(self, job_id: str) -> JobStatus:
        return self.writer.cancel(job_id)

    # workers -------------------------------------------------------------------------
    def _loop(self, name: str) -> None:
        if name == "cpu" and self.config.parse_nice and hasattr(os, "setpriority"):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.config.parse_nice)  # this thread only
        q = self.queues[name]
        while True:
            taken = q.get()
            if taken is None or self._stopping.is_set():
                return
            try:
                self.send(self._run(taken.work))
            except Exception as exc:  # a fault in the owner path (the stages catch their own)
                log.exception("job work %s failed", taken.work)
                self.send(owner_failed(taken.work, exc))
                if unrecorded_failure(taken.work, exc):
                    self.later(taken.work)
            finally:
                q.done(taken)

    def _run(self, work: Work) -> list[Work]:
        if work.queue == "write":
            return self.writer.handle(work)
        for attempt in range(self.config.max_retries + 1):
            try:
                return run_stage(self.ctx, work)
            except TRANSIENT as exc:
                if attempt == self.config.max_retries or self._stopping.is_set():
                    return give_up(work, exc)
                delay = retry_delay(self.config, attempt)
                log.warning("%s of job %s: %s; retry in %.1fs", work.stage, work.job_id, exc, delay)
                time.sleep(delay)
        return []


def owner_failed(work: Work, exc: Exception) -> list[Work]:
    """What follows work whose owner step raised: its file fails with the reason, so the job ends (work
    dropped here would leave the job running until a restart redid it). When failing the file is what raised,
    nothing follows: a full disk sends it again later (:class:`~mmrag.jobs.retry_later.RetryLater`), another
    fault is logged and the job's next restart resumes it."""
    if work.stage == "commit" and isinstance(work.info, Failed):
        return []
    if disk_full(exc):
        full = no_space(f"the {work.stage} of a page batch")
        return failed(work, full.code, full.message)
    return failed(work, "internal_error", f"{work.stage} failed: {type(exc).__name__}: {exc}")


def local_runner(writer: JobWriter, ctx: StageContext, settings: Settings) -> LocalRunner:
    """The embedded runner (a :data:`RunnerFactory`): the stages run on this process's embedders."""
    return LocalRunner(ctx, writer, settings.jobs)
