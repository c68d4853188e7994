"""The embedded runner's queues: work served round-robin by corpus, a bound on what one corpus holds.

Within a corpus, work goes by stage order (parses before plans: a job of many files starts embedding
its first file before planning the others), then first in, first out. Across corpora, each ``get``
serves the next corpus in turn that has work and holds fewer than ``share`` items taken and not yet
:meth:`~FairQueue.done`; so a corpus whose files take their whole parse budget holds at most ``share``
of the threads and the others' uploads go on beside it.

Lifecycle: one per queue of a runner; ``put`` / ``get`` / ``done`` from any thread; ``stop()`` makes one
``get`` return None (one per thread).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from mmrag.jobs.model import Work

STAGE_ORDER = {"parse": 0, "plan": 1}  # within a corpus: parses before plans; other stages 0


@dataclass(slots=True)
class _Corpus:
    pending: list[tuple[int, int, Work]] = field(default_factory=list)  # heap of (stage order, arrival, work)
    held: int = 0  # items taken by a thread and not yet done


@dataclass(frozen=True, slots=True)
class Taken:
    """What ``get`` hands a thread: the work and the corpus to pass to :meth:`FairQueue.done`."""

    work: Work
    corpus: str


class FairQueue:
    def __init__(self, share: int | None = None) -> None:
        self.share = share  # most items one corpus holds at once (None: no bound)
        self._corpora: OrderedDict[str, _Corpus] = OrderedDict()  # in turn order: the next served is first
        self._seq = itertools.count()
        self._stops = 0
        self._cond = threading.Condition()

    def put(self, work: Work, corpus: str) -> None:
        with self._cond:
            entry = self._corpora.setdefault(corpus, _Corpus())
            heapq.heappush(entry.pending, (STAGE_ORDER.get(work.stage, 0), next(self._seq), work))
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stops += 1
            self._cond.notify()

    def get(self) -> Taken | None:
        """The next work in turn (blocks until there is some); None after ``stop``."""
        with self._cond:
            while True:
                if self._stops:
                    self._stops -= 1
                    return None
                taken = self._next()
                if taken is not None:
                    return taken
                self._cond.wait()

    def _next(self) -> Taken | None:
        for name, entry in self._corpora.items():
            if entry.pending and (self.share is None or entry.held < self.share):
                entry.held += 1
                self._corpora.move_to_end(name)  # its turn is over: the others come first
                return Taken(heapq.heappop(entry.pending)[2], name)
        return None

    def done(self, taken: Taken) -> None:
        """The thread has finished ``taken``: its corpus may take another."""
        with self._cond:
            entry = self._corpora[taken.corpus]
            entry.held -= 1
            if not entry.pending and not entry.held:
                del self._corpora[taken.corpus]
            self._cond.notify_all()

    def qsize(self) -> int:
        with self._cond:
            return sum(len(e.pending) for e in self._corpora.values())
