"""torch intra-op threads of the embedding service's forward pass, chosen by measurement.

On CPU the best thread count depends on the batch and on what else runs: on the 2-core box of
docs/benchmarks.md a batch of 32 texts runs ~1.9x faster on 2 threads than on 1 when nothing
else competes, while a single text, or any batch while other work holds a core, runs faster (up
to 5x) on one thread, because torch's OpenMP workers spin-wait against the event loop and the
other processes. No fixed number is right, so :class:`ThreadPicker` measures: per batch-size
class it keeps a moving average of forward seconds per padded token for each candidate count
(1, cores - 1, cores), uses the fastest, and re-measures each other candidate every
``explore_every`` (32) batches or ``explore_s`` (5) seconds of that class, whichever comes first (a
candidate more than ``hopeless`` (1.5) times slower than the best: 4 times as rarely), so the choice
follows the load; a slower batch now and then is the price (it shows in tail latency, so
re-measuring is rare). The average falls at once to a faster measurement and rises by
``smoothing`` per slower one: a count that was slow only while something else held the cores is
trusted again after one good batch, and a count that turns slow is left after a few.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def cpu_cores() -> int:
    """Cores this process may run on (the affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_torch_threads(threads: int) -> None:
    """Set torch's intra-op threads (no-op without torch, or when already set)."""
    try:
        import torch
    except ImportError:  # an embedder without torch
        return
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def candidates(configured: int, cores: int | None = None) -> list[int]:
    """The thread counts to choose from: the configured one alone, or (0 = auto) 1, cores-1, cores."""
    if configured > 0:
        return [configured]
    n = cores or cpu_cores()
    return sorted({1, max(1, n - 1), n})


@dataclass(slots=True)
class _Class:
    """Measurements of one batch-size class."""

    batches: int = 0
    per_token: dict[int, float] = field(default_factory=dict)  # threads -> EWMA seconds per padded token
    last_tried: dict[int, int] = field(default_factory=dict)  # threads -> batch number when last measured
    last_tried_at: dict[int, float] = field(default_factory=dict)  # threads -> clock when last measured


class ThreadPicker:
    """Lifecycle: one per batcher; the forward thread calls ``choose(items)`` before a batch and
    ``record(items, threads, seconds, tokens)`` after it. Thread-safe (one lock)."""

    def __init__(self, options: list[int], *, explore_every: int = 32, explore_s: float = 5.0,
                 hopeless: float = 1.5, smoothing: float = 0.3,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not options:
            raise ValueError("no thread counts to choose from")
        self.options = options
        self.explore_every, self.explore_s = explore_every, explore_s
        self.hopeless, self.smoothing, self._clock = hopeless, smoothing, clock
        self._classes: dict[int, _Class] = {}
        self._lock = threading.Lock()
        self.chosen: dict[int, int] = {}  # threads -> batches run with it

    @staticmethod
    def size_class(items: int) -> int:
        """Batches of 1, 2-3, 4-7, 8-15, ... items share measurements."""
        return int(math.log2(max(1, items)))

    def choose(self, items: int) -> int:
        with self._lock:
            c = self._classes.setdefault(self.size_class(items), _Class())
            c.batches += 1
            untried = [t for t in self.options if t not in c.per_token]
            if untried:
                pick = untried[0]
            else:
                best = min(self.options, key=lambda t: c.per_token[t])
                pick = best
                due = [t for t in self.options if t != best and self._due(c, t, c.per_token[best])]
                if due:
                    pick = min(due, key=lambda t: c.last_tried.get(t, 0))
            c.last_tried[pick] = c.batches
            c.last_tried_at[pick] = self._clock()
            return pick

    def _due(self, c: _Class, threads: int, best: float) -> bool:
        rarely = 4 if c.per_token[threads] > self.hopeless * best else 1
        waited = self._clock() - c.last_tried_at.get(threads, 0.0)
        return (c.batches - c.last_tried.get(threads, 0) >= self.explore_every * rarely
                or waited >= self.explore_s * rarely)

    def record(self, items: int, threads: int, seconds: float, tokens: int) -> None:
        """One measured forward: ``tokens`` = items x the longest item (what the batch computed)."""
        rate = seconds / max(1, tokens)
        with self._lock:
            c = self._classes.setdefault(self.size_class(items), _Class())
            old = c.per_token.get(threads)
            slower = old is not None and rate > old
            c.per_token[threads] = (1 - self.smoothing) * old + self.smoothing * rate if slower else rate  # type: ignore[operator]
            self.chosen[threads] = self.chosen.get(threads, 0) + 1

    def snapshot(self) -> dict[str, object]:
        """Batches run per thread count, and per size class the measured microseconds per token."""
        with self._lock:
            return {"batches_by_threads": dict(sorted(self.chosen.items())),
                    "us_per_token": {f"{2 ** k}+": {t: round(1e6 * v, 2) for t, v in sorted(c.per_token.items())}
                                     for k, c in sorted(self._classes.items())}}
