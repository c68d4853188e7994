"""The job writer keeps the single-writer rule itself: two runners' threads calling it at once apply
their work one after the other, without any lock of their own."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from mmrag.jobs.model import FileState, Work
from mmrag.jobs.writer import JobWriter


class Jobs:
    """Job state that says every job is running with one running file."""

    def status(self, job_id: str) -> Any:
        return SimpleNamespace(id=job_id, finished=False, files=[SimpleNamespace(state=FileState.RUNNING)])


def test_handle_calls_from_two_threads_never_overlap() -> None:
    writer = JobWriter(catalog=None, store=None, jobs=Jobs(), spool=None)  # type: ignore[arg-type]
    entered = {"a": threading.Event(), "b": threading.Event()}
    proceed = threading.Event()
    inside: list[str] = []
    overlaps: list[list[str]] = []

    def write(job: Any, work: Work) -> None:
        inside.append(job.id)
        if len(inside) > 1:
            overlaps.append(list(inside))
        entered[job.id].set()
        if job.id == "a":
            proceed.wait(10)
        inside.remove(job.id)

    writer._write = write  # type: ignore[method-assign]
    a = threading.Thread(target=writer.handle, args=(Work("write", "a", 0, 0),))
    b = threading.Thread(target=writer.handle, args=(Work("write", "b", 0, 0),))
    a.start()
    assert entered["a"].wait(10)
    b.start()
    assert not entered["b"].wait(0.5), "b was applied while a was still being applied"
    proceed.set()
    a.join(10)
    b.join(10)
    assert entered["b"].is_set() and overlaps == []
