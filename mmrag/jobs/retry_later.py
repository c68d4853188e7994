"""Owner work that met a full disk where no follow-up can stand in for it, sent again later.

A file's failure is recorded by the writer (its points dropped, its state set, the job finished); on a
full disk that recording can itself fail (the store's flush, the job state's SQLite). Dropped, it would
leave the job ``running`` until a restart resumed it. :class:`RetryLater` sends such work again after a
delay that doubles (``first_s`` up to ``most_s``) until the writer applies it, so the job ends, failed with
the file's reason, as soon as there is room; a restart before that resumes the job as it would have.

Lifecycle: one per runner; ``__call__`` from any thread; ``stop()`` with the runner cancels what waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from mmrag.disk_space import disk_full
from mmrag.jobs.model import Failed, Work

log = logging.getLogger(__name__)


def unrecorded_failure(work: Work, exc: BaseException) -> bool:
    """Whether ``exc`` is the full disk stopping the writer from recording a file's failure (``work``)."""
    return work.stage == "commit" and isinstance(work.info, Failed) and disk_full(exc)


class RetryLater:
    def __init__(self, send: Callable[[list[Work]], None], first_s: float, most_s: float = 60.0) -> None:
        self.send, self.first_s, self.most_s = send, first_s, most_s
        self._tries: dict[tuple[str, int, int], int] = {}  # (job, file, batch) -> times sent again
        self._timers: set[threading.Timer] = set()
        self._lock = threading.Lock()

    def __call__(self, work: Work) -> None:
        key = (work.job_id, work.file, work.batch)
        with self._lock:
            tries = self._tries[key] = self._tries.get(key, 0) + 1
            if len(self._tries) > 10_000:
                self._tries.clear()
            delay = min(self.most_s, self.first_s * 2 ** (tries - 1))
            timer = threading.Timer(delay, self._fire, args=(work,))
            timer.daemon = True
            self._timers.add(timer)
        log.warning("job %s: the failure of file %d could not be recorded (disk full); trying again in %.1fs",
                    work.job_id, work.file, delay)
        timer.start()

    def _fire(self, work: Work) -> None:
        with self._lock:
            self._timers = {t for t in self._timers if t.is_alive() and t is not threading.current_thread()}
        self.send([work])

    def waiting(self) -> int:
        """Work waiting to be sent again."""
        with self._lock:
            return sum(t.is_alive() and t is not threading.current_thread() for t in self._timers)

    def stop(self) -> None:
        with self._lock:
            for t in self._timers:
                t.cancel()
            self._timers.clear()
