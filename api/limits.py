"""Per-key limits: a token-bucket request rate and a cap on unfinished jobs. Plain bookkeeping
(thread-safe, clock passed in for tests); the shell turns a refusal into 429 + Retry-After."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mmrag.errors import Overloaded


class RateLimiter:
    """``rate`` requests/s on average per key, ``burst`` at once; ``rate == 0``: no limit."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key id -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one token: 0.0 if allowed, else the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0


class JobQuota:
    """At most ``limit`` unfinished jobs per key (``0``: no limit). ``finished`` tells whether a job
    id is done; finished ids are forgotten at the next check."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._jobs: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def check(self, key: str, finished: Callable[[str], bool]) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            live = [j for j in self._jobs.get(key, []) if not finished(j)]
            self._jobs[key] = live
        if len(live) >= self.limit:
            raise Overloaded(f"this key has {len(live)} unfinished jobs; the limit is {self.limit} "
                             "(MMRAG_API__MAX_JOBS_PER_KEY); retry when one has finished", retry_after=5.0)

    def add(self, key: str, job_id: str) -> None:
        if self.limit > 0:
            with self._lock:
                self._jobs.setdefault(key, []).append(job_id)
