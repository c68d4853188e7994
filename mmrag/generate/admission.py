"""Token-aware admission: requests enter by token cost against a budget, fairly across cost lanes.

Cost of a request = prefill tokens (text + visual) + ``max_new_tokens`` (the KV it may grow to).
The sum of admitted costs never exceeds ``token_budget``, so the device never runs out of KV.

Fairness (why cheap text requests do not wait behind image-heavy ones): waiting requests are
ordered by *start-time fair queueing* over cost lanes (lane = power-of-4 bucket of cost, so
text-only questions and 4-page image questions fall in different lanes). Each lane's tags grow by
the tokens it was given, so when both are backlogged each lane gets an equal share of tokens
and a 200-token question is not queued behind 20,000 tokens of pages. Within a lane, FIFO.
When the first request in that order does not fit the free budget, cheaper ones that do fit
are admitted past it (backfill), but only for ``starvation_s``: after that the head reserves
the budget as it drains, so image-heavy requests cannot starve either.

When the queue is full (``max_queue_requests`` / ``max_queue_tokens``) ``submit`` raises
:class:`~mmrag.errors.Overloaded` with a ``retry_after`` estimated from the queued tokens and the
observed token throughput. A request that waits longer than ``queue_timeout_s`` is expired
(its waiter raises Overloaded): nothing hangs.

Lifecycle: one controller per engine. ``submit`` -> (``schedule`` admits) -> ``release`` when
the request finishes; or ``cancel``/``expire`` while it waits. Thread-safe (one lock); the
policy is plain bookkeeping, unit-tested with fake requests and a fake clock.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from mmrag.errors import InvalidInput, Overloaded

Policy = Literal["fair", "fcfs"]


@dataclass(slots=True)
class Ticket:
    """One request's place in admission."""

    request_id: str
    cost: int  # prefill tokens (text + visual) + max_new_tokens
    visual_tokens: int = 0  # part of the prefill from images (for metrics)
    submitted_at: float = 0.0  # clock time of submit
    admitted_at: float | None = None  # clock time of admission
    lane: int = 0  # cost bucket
    start_tag: float = 0.0  # fair-queueing virtual start time
    seq: int = 0  # arrival order (FIFO within a lane, order of FCFS)
    admitted: threading.Event = field(default_factory=threading.Event)
    expired: bool = False  # removed by expire() or cancel() before admission

    def wait(self, timeout: float) -> bool:
        """Block until admitted (True) or ``timeout`` seconds pass (False)."""
        return self.admitted.wait(timeout)


def lane_of(cost: int) -> int:
    """Power-of-4 bucket of a token cost: 1-3 -> 0, 4-15 -> 1, ..., 4096-16383 -> 6."""
    return int(math.log(max(cost, 1), 4))


class AdmissionController:
    """Admits by tokens against ``token_budget``; see the module docstring for the policy."""

    def __init__(
        self,
        token_budget: int,
        *,
        max_queue_requests: int = 64,
        max_queue_tokens: int = 1 << 20,
        queue_timeout_s: float = 30.0,
        starvation_s: float = 2.0,
        policy: Policy = "fair",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.token_budget = token_budget
        self.max_queue_requests = max_queue_requests
        self.max_queue_tokens = max_queue_tokens
        self.queue_timeout_s = queue_timeout_s
        self.starvation_s = starvation_s
        self.policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: list[Ticket] = []
        self._running: dict[str, Ticket] = {}
        self._used = 0
        self.peak_used = 0  # highest admitted token sum seen (must stay <= token_budget)
        self.rejected = 0  # submissions refused because the queue was full (429)
        self._vtime = 0.0  # fair-queueing virtual time
        self._lane_finish: dict[int, float] = {}
        self._seq = 0
        self._head_blocked: tuple[int, float] | None = None  # (seq of blocked head, since)
        self._tokens_per_s = 0.0  # EWMA of released cost per second of runtime (retry_after)

    # --- queries -----------------------------------------------------------------------
    @property
    def used_tokens(self) -> int:
        return self._used

    @property
    def queued(self) -> int:
        return len(self._waiting)

    @property
    def queued_tokens(self) -> int:
        return sum(t.cost for t in self._waiting)

    def retry_after(self) -> float:
        """Seconds until the queued work is likely drained (at least 1)."""
        rate = self._tokens_per_s or self.token_budget / 10.0
        return max(1.0, round((self.queued_tokens + self._used) / rate, 1))

    # --- lifecycle ---------------------------------------------------------------------
    def submit(self, request_id: str, cost: int, visual_tokens: int = 0) -> Ticket:
        """Queue a request (admitting it at once if it fits); raise Overloaded if the queue is full."""
        if cost > self.token_budget:
            raise InvalidInput(
                f"request needs {cost} tokens (prefill + max_new_tokens); the engine's budget "
                f"is {self.token_budget}: lower max_new_tokens or the visual-token budget"
            )
        with self._lock:
            lane = lane_of(cost)
            before = self._lane_finish.get(lane)
            start = max(self._vtime, before or 0.0)
            self._lane_finish[lane] = start + cost
            self._seq += 1
            ticket = Ticket(request_id, cost, visual_tokens, self._clock(), lane=lane, start_tag=start, seq=self._seq)
            self._waiting.append(ticket)
            self._schedule_locked()
            if not ticket.admitted.is_set() and (
                len(self._waiting) > self.max_queue_requests or self.queued_tokens > self.max_queue_tokens
            ):
                self._waiting.remove(ticket)  # it would wait in a full queue: refuse, undo its tag
                if before is None:
                    del self._lane_finish[lane]
                else:
                    self._lane_finish[lane] = before
                self.rejected += 1
                raise Overloaded(
                    f"VLM queue is full ({len(self._waiting)} requests, {self.queued_tokens} tokens waiting)",
                    retry_after=self.retry_after(),
                )
        return ticket

    def schedule(self) -> list[Ticket]:
        """Admit every waiting request the policy allows now; returns the newly admitted."""
        with self._lock:
            return self._schedule_locked()

    def release(self, ticket: Ticket) -> list[Ticket]:
        """Give a finished request's tokens back; admits waiters and returns them."""
        with self._lock:
            if self._running.pop(ticket.request_id, None) is not None:
                self._used -= ticket.cost
                if ticket.admitted_at is not None:
                    took = max(self._clock() - ticket.admitted_at, 1e-6)
                    rate = ticket.cost / took * max(1, len(self._running) + 1)
                    self._tokens_per_s = rate if not self._tokens_per_s else 0.8 * self._tokens_per_s + 0.2 * rate
            return self._schedule_locked()

    def cancel(self, ticket: Ticket) -> bool:
        """Withdraw a waiting request; False if it was already admitted (then ``release`` it)."""
        with self._lock:
            if ticket.admitted.is_set():
                return False
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            ticket.expired = True
            self._schedule_locked()
            return True

    def expire(self) -> list[Ticket]:
        """Remove requests waiting longer than ``queue_timeout_s``; returns them."""
        with self._lock:
            now = self._clock()
            old = [t for t in self._waiting if now - t.submitted_at > self.queue_timeout_s]
            for t in old:
                self._waiting.remove(t)
                t.expired = True
            if old:
                self._schedule_locked()
            return old

    # --- policy ------------------------------------------------------------------------
    def _order(self) -> list[Ticket]:
        if self.policy == "fcfs":
            return sorted(self._waiting, key=lambda t: t.seq)
        return sorted(self._waiting, key=lambda t: (t.start_tag, t.seq))

    def _schedule_locked(self) -> list[Ticket]:
        admitted: list[Ticket] = []
        now = self._clock()
        order = self._order()
        if not order:
            self._head_blocked = None
            return admitted
        head = order[0]
        for ticket in order:
            if self._used + ticket.cost <= self.token_budget:
                self._admit(ticket, now)
                admitted.append(ticket)
                continue
            if ticket is not head:
                continue
            # the head does not fit: FCFS stops here; fair backfills cheaper requests for starvation_s
            if self.policy == "fcfs":
                break
            if self._head_blocked is None or self._head_blocked[0] != head.seq:
                self._head_blocked = (head.seq, now)
            if now - self._head_blocked[1] >= self.starvation_s:
                break
        return admitted

    def _admit(self, ticket: Ticket, now: float) -> None:
        self._waiting.remove(ticket)
        self._running[ticket.request_id] = ticket
        self._used += ticket.cost
        self.peak_used = max(self.peak_used, self._used)
        self._vtime = max(self._vtime, ticket.start_tag)
        ticket.admitted_at = now
        ticket.admitted.set()
