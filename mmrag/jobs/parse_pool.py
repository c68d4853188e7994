"""Parse work in worker processes that can be stopped: a wall clock, a memory limit, cancel and shutdown.

:class:`ParsePool` keeps a few long-lived :mod:`mmrag.jobs.parse_worker` processes (started on demand,
each in its own session so its OCR helpers die with it). A call sends one :class:`ParseRequest` to an
idle worker and waits for its answer, looking every :data:`POLL_S` seconds at the clocks: the call's
(``parse_timeout_s``), for a page batch the page's (``page_timeout_s``, restarted as each page
starts) and, when the caller gives one, what is left of the document's parse budget
(:class:`DocumentBudget`: ``document_parse_timeout_s`` less its earlier calls). Past any of them, the
worker is killed and the call raises :class:`~mmrag.errors.TooComplex`
naming the setting; when the job is cancelled or the pool closes (the service stops), the worker is
killed and the call raises :class:`ParseInterrupted` (the work is redone after a restart, or dropped).
A worker that answered goes back to the idle list (at most ``idle`` kept) until it has answered
``max_calls`` calls, then it is replaced by a fresh one (what a worker parsed stays in its heap); one that was
killed is replaced at once.

Lifecycle: built with the stage context (no process starts until the first call); ``call`` from any
thread, each call holds one worker; ``close()`` kills every worker, busy ones included. A forked
process (Celery prefork) starts its own workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mmrag
from mmrag.errors import CorruptDocument, InvalidInput, TooComplex, error_for_code
from mmrag.jobs import spool_codec
from mmrag.jobs.parse_worker import ERROR, HEADER, PAGE, REQUEST, RESULT, ParseRequest, write_frame

POLL_S = 0.1  # how often a waiting call looks at its clocks, the job's cancel mark and the pool's stop
_ROOT = str(Path(mmrag.__file__).resolve().parents[1])  # the workers import this copy of mmrag


class ParseInterrupted(Exception):
    """The call was stopped: its job was cancelled, or the pool closed (the service is stopping)."""


@dataclass(frozen=True, slots=True)
class DocumentBudget:
    """What a document's parse calls may take in all (``document_parse_timeout_s``) and what its earlier
    calls took; a call may run for the rest."""

    limit_s: float  # the document's total parse time
    spent_s: float  # seconds of its parse calls finished before this one

    def left_s(self) -> float:
        return self.limit_s - self.spent_s

    def exceeded(self, filename: str, what: str, call_s: float) -> TooComplex:
        return TooComplex(f"{filename}: parsing this document took {self.spent_s + call_s:,.0f} s in all (stopped at "
                          f"{what}), past its total parse budget of {self.limit_s:,g} s; raise "
                          "MMRAG_INGEST__DOCUMENT_PARSE_TIMEOUT_S to index documents this long or slow",
                          detail={"limit": "document_parse_timeout_s", "seconds": self.limit_s})


def _what(request: ParseRequest) -> str:
    if request.task == "render":
        return f"rendering page {request.first}"
    return "reading the document" if request.task == "source" else f"pages {request.first}-{request.last}"


class _Worker:
    """One worker process and the bytes read from it so far."""

    def __init__(self, memory_mb: int, nice: int = 0) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]),
               "OMP_THREAD_LIMIT": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "mmrag.jobs.parse_worker", str(memory_mb), str(nice)],
                                     env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        self._buf = bytearray()
        self.calls = 0  # calls sent to it

    def send(self, payload: bytes) -> None:
        assert self.proc.stdin is not None
        self.calls += 1
        write_frame(self.proc.stdin, REQUEST, payload)  # type: ignore[arg-type]

    def poll(self, timeout: float) -> tuple[bytes, bytes] | None:
        """The next frame if one arrives within ``timeout``; EOFError when the process has ended."""
        frame = self._frame()
        if frame is not None:
            return frame
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        if select.select([fd], [], [], timeout)[0]:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError
            self._buf += chunk
        return self._frame()

    def _frame(self) -> tuple[bytes, bytes] | None:
        if len(self._buf) < HEADER.size:
            return None
        tag, size = HEADER.unpack_from(self._buf)
        if len(self._buf) < HEADER.size + size:
            return None
        payload = bytes(self._buf[HEADER.size:HEADER.size + size])
        del self._buf[:HEADER.size + size]
        return tag, payload

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


class ParsePool:
    def __init__(self, memory_mb: int = 2048, idle: int = 2, nice: int = 0, max_calls: int = 0) -> None:
        self.memory_mb, self.idle, self.nice = memory_mb, idle, nice  # nice: the workers' niceness, at least
        self.max_calls = max_calls  # calls a worker answers before it is replaced (0: never)
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = threading.Event()

    @property
    def busy(self) -> int:
        """Workers running a call now."""
        return len(self._busy)

    def call(self, request: ParseRequest, cancelled: Callable[[], bool] = lambda: False,
             budget: DocumentBudget | None = None) -> Any:
        """The request's result (a Source, or a batch's pages) from a worker; its error as the file's
        error; TooComplex past a clock (or the document's ``budget``); ParseInterrupted when
        ``cancelled()`` or the pool closes."""
        if budget is not None and budget.left_s() <= 0:
            raise budget.exceeded(request.filename, _what(request), 0.0)
        payload = spool_codec.dumps(request)
        began = time.monotonic()  # the document's budget counts a wait for a worker to read the request too
        worker = self._take()
        answered = False
        try:
            try:
                worker.send(payload)
            except BrokenPipeError:  # an idle worker that died meanwhile (nothing of this call ran): a fresh one
                self._give(worker, False)
                worker = self._take(fresh=True)
                worker.send(payload)
            result, error = self._wait(worker, request, cancelled, budget, began)
            answered = error is None  # a worker that failed a file (memory spent, MuPDF's state) is not reused
        except BrokenPipeError:
            raise self._died(worker, request) from None
        finally:
            self._give(worker, answered)
        if error is not None:
            raise error
        return result

    def _wait(self, worker: _Worker, request: ParseRequest, cancelled: Callable[[], bool],
              budget: DocumentBudget | None, began: float) -> tuple[Any, Exception | None]:
        """(result, None) or (None, the file's error) once the worker answers; raises to stop it."""
        start = page_start = time.monotonic()
        page = 0
        while True:
            try:
                frame = worker.poll(POLL_S)
            except EOFError:
                raise self._died(worker, request) from None
            if frame is not None and frame[0] == PAGE:
                page, page_start = int(frame[1]), time.monotonic()
            elif frame is not None and frame[0] == RESULT:
                return spool_codec.loads(frame[1]), None
            elif frame is not None and frame[0] == ERROR:
                body = json.loads(frame[1])
                if body["code"] == "internal_error":
                    return None, RuntimeError(body["message"])
                return None, error_for_code(body["code"], body["message"], fallback=InvalidInput,
                                            detail=body["detail"])
            self._check(request, cancelled, time.monotonic() - start, page, time.monotonic() - page_start)
            if budget is not None and time.monotonic() - began > budget.left_s():
                raise budget.exceeded(request.filename, f"page {page}" if page else _what(request),
                                      time.monotonic() - began)

    def _check(self, request: ParseRequest, cancelled: Callable[[], bool], call_s: float,
               page: int, page_s: float) -> None:
        """Raise (the worker is killed on the way out) when the call must stop."""
        config = request.config
        if self._closed.is_set():
            raise ParseInterrupted("the service is stopping")
        if cancelled():
            raise ParseInterrupted("the job was cancelled")
        what = _what(request)
        if call_s > config.parse_timeout_s:
            raise TooComplex(f"{request.filename}: {what} did not finish within the parse time limit of "
                             f"{config.parse_timeout_s:g} s and was stopped (MMRAG_INGEST__PARSE_TIMEOUT_S)",
                             detail={"limit": "parse_timeout_s", "seconds": config.parse_timeout_s})
        if request.task in ("pages", "render") and page_s > config.page_timeout_s:
            which = f"page {page}" if page else f"reading the section headings of pages {request.first}-{request.last}"
            which = f"rendering page {request.first}" if request.task == "render" else which
            raise TooComplex(f"{request.filename}: {which} did not finish within the per-page time limit of "
                             f"{config.page_timeout_s:g} s and was stopped (MMRAG_INGEST__PAGE_TIMEOUT_S)",
                             detail={"limit": "page_timeout_s", "seconds": config.page_timeout_s, "page": page})

    def _died(self, worker: _Worker, request: ParseRequest) -> Exception:
        """The error of a worker that ended during a call (not killed by this pool)."""
        if self._closed.is_set():
            return ParseInterrupted("the service is stopping")
        code = worker.proc.wait()
        if code == -signal.SIGKILL:  # the kernel's OOM killer
            return TooComplex(f"{request.filename}: parsing was killed for its memory use (limit "
                              f"{self.memory_mb:,} MiB, MMRAG_INGEST__PARSE_MEMORY_MB)",
                              detail={"limit": "parse_memory_mb"})
        return CorruptDocument(f"{request.filename}: the parser crashed on this file (exit {code}); upload a "
                               "valid file", detail={"reason": "parser_crash"})

    def _take(self, fresh: bool = False) -> _Worker:
        with self._lock:
            if os.getpid() != self._pid:  # forked: the parent's workers are not ours
                self._reset()
            if self._closed.is_set():
                raise ParseInterrupted("the service is stopping")
            while self._idle and self._idle[-1].proc.poll() is not None:
                self._idle.pop()  # ended while idle (the thread that started it is gone)
            worker = self._idle.pop() if self._idle and not fresh else None
        worker = worker or _Worker(self.memory_mb, self.nice)
        with self._lock:
            self._busy.add(worker)
        return worker

    def _give(self, worker: _Worker, answered: bool) -> None:
        """Back to the idle list if it answered, has calls left and there is room; otherwise killed (it may be
        mid-call) and, if the idle list is short, replaced now (the next call does not wait for a start-up)."""
        with self._lock:
            self._busy.discard(worker)
            keep = (answered and not self._closed.is_set() and worker.proc.poll() is None
                    and len(self._idle) < self.idle and not (self.max_calls and worker.calls >= self.max_calls))
            if keep:
                self._idle.append(worker)
        if not keep:
            worker.kill()
            self.warm(self.idle)

    def warm(self, n: int) -> None:
        """Start idle workers now (returns at once; their start-up, ~1 s of imports, overlaps what comes
        next). A worker dies with the thread that started it: call this from one that lives as long as the pool."""
        if self._closed.is_set() or os.getpid() != self._pid:
            return
        started = [_Worker(self.memory_mb, self.nice) for _ in range(max(0, n - len(self._idle) - len(self._busy)))]
        with self._lock:
            if self._closed.is_set():
                for worker in started:
                    worker.kill()
                return
            self._idle.extend(started)

    def close(self) -> None:
        """Kill every worker; calls in progress raise ParseInterrupted, later ones too."""
        self._closed.set()
        with self._lock:
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()
