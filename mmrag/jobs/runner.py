"""The embedded job runner: the stage code on worker threads, no broker.

Three in-memory queues mirror the Celery queues: ``cpu`` (plan, parse) and ``gpu`` (embed) run
on ``cpu_workers`` / ``embed_workers`` threads; ``write`` (write, commit) runs on one thread, the
single writer of the store, catalog and job state. The ``cpu`` queue serves parses before plans
(then first come, first served), so a job of many files starts embedding its first file while the
others are still to plan; the stages' window (:mod:`mmrag.jobs.stages`) keeps parsing at most
``parse_ahead`` batches ahead of embedding. torch's threads are set once (``embed_threads``).
Queues are not durable: the job state and the spool are, and :meth:`LocalRunner.start` re-sends
the pending work of every unfinished job, so a job resumes after a restart (even after SIGKILL).

Lifecycle: ``start()`` once the pipeline is built (resumes unfinished jobs), ``submit``/``cancel``
from any thread, ``stop()`` before the pipeline closes (work in flight is redone after a restart).
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from mmrag.config import JobsConfig, Settings
from mmrag.embed.threads import set_torch_threads
from mmrag.errors import Unavailable
from mmrag.jobs.model import JobStatus, Work
from mmrag.jobs.stages import TRANSIENT, StageContext, give_up, retry_delay, run_stage
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


_ORDER = {"parse": 0, "plan": 1}  # cpu queue: parses before plans
_STOP = -1  # a stop marker goes before any work


class _WorkQueue:
    """A queue of work: by stage order (``_ORDER``, others 0), then first in, first out; ``None`` stops."""

    def __init__(self) -> None:
        self._q: queue.PriorityQueue[tuple[int, int, Work | None]] = queue.PriorityQueue()
        self._seq = itertools.count()

    def put(self, work: Work | None) -> None:
        rank = _STOP if work is None else _ORDER.get(work.stage, 0)
        self._q.put((rank, next(self._seq), work))

    def get(self) -> Work | None:
        return self._q.get()[2]

    def qsize(self) -> int:
        return self._q.qsize()


class LocalRunner:
    def __init__(self, ctx: StageContext, writer: JobWriter, config: JobsConfig) -> None:
        self.ctx, self.writer, self.config = ctx, writer, config
        self.queues: dict[str, _WorkQueue] = {q: _WorkQueue() for q in ("cpu", "gpu", "write")}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    def start(self) -> None:
        if self.config.embed_threads and self.ctx.spaces is not None:
            set_torch_threads(self.config.embed_threads)
        counts = {"cpu": self.config.cpu_workers, "gpu": self.config.embed_workers, "write": 1}
        for name, n in counts.items():
            for i in range(n):
                t = threading.Thread(target=self._loop, args=(name,), name=f"mmrag-jobs-{name}-{i}", daemon=True)
                t.start()
                self._threads.append(t)
        for job_id in self.writer.jobs.unfinished():
            work = self.writer.pending_work(job_id)
            log.warning("resuming job %s: %d work items", job_id, len(work))
            self.send(work)

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        for name, q in self.queues.items():
            for _ in range(sum(t.name.startswith(f"mmrag-jobs-{name}-") for t in self._threads)):
                q.put(None)
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._threads.clear()

    # the dispatcher ------------------------------------------------------------------
    def send(self, work: list[Work]) -> None:
        for w in work:
            self.queues[w.queue].put(w)

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
            work = q.get()
            if work is None or self._stopping.is_set():
                return
            try:
                self.send(self._run(work))
            except Exception:  # a bug in the owner path: log, keep the thread alive; resume redoes it
                log.exception("job work %s failed", work)

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


def local_runner(writer: JobWriter, ctx: StageContext, settings: Settings) -> LocalRunner:
    """The embedded runner (a :data:`RunnerFactory`): the stages run on this process's embedders."""
    return LocalRunner(ctx, writer, settings.jobs)
