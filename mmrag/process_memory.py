"""How a long-running process hands freed memory back (glibc's malloc; elsewhere nothing is done).

Python frees its large objects (numpy arrays, page images, parse results: anything over 512 bytes) through
malloc. glibc keeps an arena per thread that allocates, up to eight per core, and raises its mmap threshold
each time a large mapped block is freed, so that later blocks of that size come from the arenas, where a freed
block stays resident until the arena's top is free. The server runs some fifty threads (request pool, job
workers, embedding batcher); in the soak (bench/soak.py, issue 42) its anonymous memory crept up by ~0.4 MB a
minute with no object left behind.

:func:`tune_malloc` (at start-up, before the worker threads exist) caps the arenas and fixes the mmap
threshold, so that a block of 256 KB or more is mapped and unmapped when freed; :class:`Trimmer` calls
``malloc_trim(0)`` every few seconds in a daemon thread, which hands the free pages inside every arena back
to the system (``madvise``) — milliseconds, with the arenas' locks held one at a time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from functools import cache

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters (malloc.h)
M_ARENA_MAX = -8
MMAP_THRESHOLD = 256 * 1024


@cache
def _glibc() -> ctypes.CDLL | None:
    """The C library where it is glibc (it has ``malloc_trim``); None elsewhere (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def tune_malloc(arenas: int) -> bool:
    """At most ``arenas`` malloc arenas (0: glibc's default) and a fixed mmap threshold; False where the C
    library is not glibc or refuses."""
    libc = _glibc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    if arenas > 0:
        ok = bool(libc.mallopt(M_ARENA_MAX, arenas)) and ok
    return ok


def trim() -> bool:
    """Hand the free memory of every arena back to the system; True when some was released."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def hand_back_memory(arenas: int, every_s: float) -> Trimmer:
    """What every long-running process of the service does at start-up, before its worker threads exist (the
    API server, each Celery worker's task process, the embedding service): :func:`tune_malloc` with ``arenas``,
    then a :class:`Trimmer` every ``every_s`` seconds (``MMRAG_API__MALLOC_ARENAS``, ``MMRAG_API__MALLOC_TRIM_S``)."""
    tune_malloc(arenas)
    return Trimmer(every_s)


class Trimmer:
    """:func:`trim` every ``every_s`` seconds in a daemon thread until :meth:`close`."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.trims = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mmrag-malloc-trim", daemon=True)
        if every_s > 0 and _glibc() is not None:
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                trim()
                self.trims += 1
            except Exception:  # never take the server down for this
                log.exception("malloc_trim failed")
                return

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
