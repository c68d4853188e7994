"""``mmrag serve`` with probes, for the kill harness (:mod:`bench.faults`): ``python -m bench.fault_probe serve ...``.

The probes change no behaviour of the server; they only say where it is, so the harness can SIGKILL it
inside a chosen stage. Each probe appends a line to the file named by ``MMRAG_FAULT_PROBE``::

    <monotonic seconds> <pid>:<thread id> enter|exit <stage>   a stage (below) starts or ends on that thread
    <monotonic seconds> <pid>:<thread id> step <write>        a durable write (spool file, store update,
                                                               catalog or job-state row) has returned

Several processes may share the file (the server and, on the distributed path, its Celery workers, started
as ``python -m bench.fault_probe worker ROLE ...``): the pid says which one to kill.

Stages: ``plan``, ``parse``, ``embed`` (the worker stages), ``write`` (the writer's batch commit: page
images + points + the batch recorded), ``finish_file`` (the document's catalog row), ``reweight`` (BM25
re-weight), ``optimize`` (the store's optimise after a job), ``delete`` (a document's deletion).

The file ``<probe>.target`` names one stage (read at each write; the harness writes it once the restarted
server has recovered): inside it, each write is followed by a pause of ``MMRAG_FAULT_PAUSE_S`` seconds
(default 0.25), so a kill the harness sends after the k-th write lands between two of the stage's writes,
whatever the machine's load (the pause only stretches the time between writes; their order is the server's
own). Empty or absent: no pause.

Checks: when ``<probe>.check`` appears (JSON, :func:`bench.fault_check.expected_from_json`), a thread runs
:func:`bench.fault_check.check` on the server's own catalog, store and job state (the harness asks once every
job has ended, so nothing writes meanwhile) and writes the findings to ``<probe>.result``; a check needs no
stop and restart of the server.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_local = threading.local()
_lock = threading.Lock()
_out: Any = None
_target_file: Path | None = None
_writers: list[Any] = []  # the JobWriter the server built (its catalog, store and job state)
PAUSE_S = float(os.environ.get("MMRAG_FAULT_PAUSE_S", "0.25"))


def _target() -> str:
    try:
        return _target_file.read_text().strip() if _target_file is not None else ""
    except FileNotFoundError:
        return ""


def _emit(event: str, name: str) -> None:
    if _out is None:
        return
    with _lock:
        _out.write(f"{time.monotonic():.6f} {os.getpid()}:{threading.get_ident()} {event} {name}\n")
        _out.flush()


def _stages() -> list[str]:
    stack: list[str] = getattr(_local, "stages", None) or []
    _local.stages = stack
    return stack


def stage(name: str | Callable[..., str], fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped as a stage (``name`` may be computed from the call's arguments)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        label = name(*args, **kwargs) if callable(name) else name
        stack = _stages()
        stack.append(label)
        _emit("enter", label)
        try:
            return fn(*args, **kwargs)
        finally:
            stack.pop()
            _emit("exit", label)

    return wrapped


def step(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped as a durable write: announced once it has returned, then paused inside the target stage."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        stack = _stages()
        if stack:
            _emit("step", name)
            target = _target()
            if target and target in stack:
                time.sleep(PAUSE_S)
        return out

    return wrapped


def _checks(probe: Path) -> None:
    """Answer each ``<probe>.check`` request with ``<probe>.result`` (a thread for the process's life)."""
    from bench.fault_check import Findings, check, expected_from_json

    request, result = probe.with_suffix(".check"), probe.with_suffix(".result")
    while True:
        if request.exists() and _writers:
            w = _writers[0]
            try:
                found = check(w.catalog, w.store, w.jobs, *expected_from_json(request.read_text()))
            except Exception as exc:  # the harness sees the failure as a finding, not as a silent probe
                found = Findings(mismatched=1, notes=[f"the check failed: {type(exc).__name__}: {exc}"])
            tmp = result.with_suffix(".tmp")
            tmp.write_text(found.to_json())
            request.unlink()
            tmp.replace(result)
        time.sleep(0.05)


def install(path: str) -> None:
    """Wrap the stages and the durable writes (the classes, so every instance the server builds has them)."""
    global _out, _target_file
    _out = open(path, "a", buffering=1)  # noqa: SIM115  (open for the process's life)
    _target_file = Path(path).with_suffix(".target")
    threading.Thread(target=_checks, args=(Path(path),), daemon=True, name="fault-probe-checks").start()
    from mmrag.catalog.bm25_lengths import Bm25Statistics
    from mmrag.catalog.documents import DocumentTable
    from mmrag.jobs import bm25_stats, runner, stages
    from mmrag.jobs.spool import Spool
    from mmrag.jobs.state import JobStore
    from mmrag.jobs.writer import JobWriter
    from mmrag.store.edge import EdgeStore

    init = JobWriter.__init__

    def keep(self: JobWriter, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _writers.append(self)

    JobWriter.__init__ = keep  # type: ignore[method-assign]
    stages.run_stage = stage(lambda ctx, work: work.stage, stages.run_stage)  # the Celery tasks' (imported later)
    runner.run_stage = stages.run_stage  # type: ignore[assignment]  # the embedded runner's (imported already)
    JobWriter._write = stage("write", JobWriter._write)  # type: ignore[method-assign]
    JobWriter._maybe_finish_file = stage("finish_file", JobWriter._maybe_finish_file)  # type: ignore[method-assign]
    JobWriter.delete_document = stage("delete", JobWriter.delete_document)  # type: ignore[method-assign]
    bm25_stats.reweight = stage("reweight", bm25_stats.reweight)
    EdgeStore.optimize = stage("optimize", step("store.optimize", EdgeStore.optimize))  # type: ignore[method-assign]
    Spool._atomic = staticmethod(step("spool.file", Spool._atomic))  # type: ignore[method-assign]
    for method in ("upsert", "delete", "update_vectors"):
        setattr(EdgeStore, method, step(f"store.{method}", getattr(EdgeStore, method)))
    for method in ("add", "delete"):
        setattr(DocumentTable, method, step(f"catalog.documents.{method}", getattr(DocumentTable, method)))
    Bm25Statistics.set_indexed = step("catalog.bm25.set_indexed", Bm25Statistics.set_indexed)  # type: ignore[method-assign]
    for method in ("set_planned", "set_file_state", "mark_batch_written", "finish"):
        setattr(JobStore, method, step(f"jobs.{method}", getattr(JobStore, method)))


if __name__ == "__main__":
    install(os.environ["MMRAG_FAULT_PROBE"])
    from cli import main

    sys.argv[0] = "mmrag"
    main()
