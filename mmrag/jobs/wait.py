"""Waiting for a job: one :class:`JobWatch` for every waiter, whatever reads the job's state and however it sleeps.

In-process callers (:func:`wait_job`: tests, benchmarks, the evaluation) read the job store; the upload
route's ``?wait=true`` (:func:`wait_job_async`, off the event loop) reads the application's job; the REST
client (:meth:`mmrag.rest_client.Client.wait_job`) reads ``GET /jobs/{id}`` and keeps its own two-line loop
over the same watch (it cannot read the store of another process).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

from mmrag.errors import Unavailable
from mmrag.jobs.model import FINISHED_JOB, JobStatus

if TYPE_CHECKING:
    from mmrag.jobs.state import JobStore

J = TypeVar("J")  # the job as the waiter reads it: a JobStatus, or the REST job's JSON


class JobWatch(Generic[J]):
    """One wait on one job. Lifecycle: made when the wait starts; :meth:`finished` is called with each
    reading of the job until it says True (or raises :class:`~mmrag.errors.Unavailable` past ``timeout_s``)."""

    def __init__(self, job_id: str, state: Callable[[J], str], *, progress: Callable[[J], None] | None = None,
                 change: Callable[[J], Hashable] | None = None, timeout_s: float | None = None) -> None:
        self.job_id = job_id
        self.state = state  # the job's state name (a JobState value)
        self.progress = progress  # told each reading that ``change`` says differs from the last one told
        self.change = change or state
        self.timeout_s = timeout_s
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.last: Hashable = None

    def finished(self, job: J) -> bool:
        """Whether the job has finished (done, failed or cancelled), telling ``progress`` of a change first."""
        if self.progress is not None and (key := self.change(job)) != self.last:
            self.last = key
            self.progress(job)
        state = self.state(job)
        if state in FINISHED_JOB:
            return True
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Unavailable(f"job {self.job_id} has not finished after {self.timeout_s:.0f}s (state {state})")
        return False


def status_watch(job_id: str, progress: Callable[[JobStatus], None] | None) -> JobWatch[JobStatus]:
    """A watch over the job store's statuses: progress is a change of the update time or the pages done."""
    return JobWatch(job_id, lambda job: job.state, progress=progress,
                    change=lambda job: (job.updated_at, job.pages_done))


def wait_job(jobs: JobStore, job_id: str, progress: Callable[[JobStatus], None] | None = None,
             every: float = 0.02) -> JobStatus:
    """Poll the job state until the job has finished; ``progress`` sees every change."""
    watch = status_watch(job_id, progress)
    while not watch.finished(job := jobs.status(job_id)):
        time.sleep(every)
    return job


async def wait_job_async(read: Callable[[], J], watch: JobWatch[J], every: float = 0.2) -> J:
    """Wait for an event loop: each ``read`` of the job runs on a worker thread, the loop sleeps between them."""
    while not watch.finished(job := await asyncio.to_thread(read)):
        await asyncio.sleep(every)
    return job
