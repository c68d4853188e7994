"""Per-key limits (a token-bucket request rate, caps on unfinished jobs and evaluations) and the request
body limit of each route. Plain bookkeeping (thread-safe, clock passed in for tests); the shell turns a
refusal into 429 + Retry-After, or 413."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mmrag.config import Settings
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
    """At most ``limit`` unfinished jobs (or evaluations) per key (``0``: no limit). ``finished`` tells
    whether an id is done; finished ids are forgotten at the next check."""

    def __init__(self, limit: int, what: str = "unfinished jobs", setting: str = "MMRAG_API__MAX_JOBS_PER_KEY") -> None:
        self.limit, self.what, self.setting = limit, what, setting
        self._jobs: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def check(self, key: str, finished: Callable[[str], bool]) -> None:
        if self.limit <= 0:
            return
        with self._lock:
            live = [j for j in self._jobs.get(key, []) if not finished(j)]
            self._jobs[key] = live
        if len(live) >= self.limit:
            raise Overloaded(f"this key has {len(live)} {self.what}; the limit is {self.limit} "
                             f"({self.setting}); retry when one has finished", retry_after=5.0)

    def add(self, key: str, job_id: str) -> None:
        if self.limit > 0:
            with self._lock:
                self._jobs.setdefault(key, []).append(job_id)


# Request bodies per route: uploads may be large, searches carry one query image, the rest is small JSON.
UPLOAD_ROUTES = frozenset({("POST", "/corpora/{corpus}/documents")})
IMAGE_ROUTES = {("POST", "/corpora/{corpus}/search/image"): 1.0, ("POST", "/corpora/{corpus}/search"): 4 / 3,
                ("POST", "/v1/chat/completions"): 4 / 3,  # a base64 image (a data URL) in the question
                ("POST", "/mcp"): 4 / 3}  # the search tool's image_base64
_ENVELOPE = 256 * 1024  # the rest of a search request besides its image (query, filters, multipart headers)


def body_limit(method: str, path: str, settings: Settings) -> tuple[int, str]:
    """(largest body in bytes, the setting that says so) of the route ``method path`` (its template)."""
    if (method, path) in UPLOAD_ROUTES:
        return settings.api.max_request_bytes, "MMRAG_API__MAX_REQUEST_BYTES"
    factor = IMAGE_ROUTES.get((method, path))
    if factor is not None:
        image = int(settings.retrieve.max_query_image_bytes * factor)
        return image + _ENVELOPE, "MMRAG_RETRIEVE__MAX_QUERY_IMAGE_BYTES"
    return settings.api.max_json_bytes, "MMRAG_API__MAX_JSON_BYTES"
