"""AdmissionController with fake requests and a fake clock."""

from __future__ import annotations

import pytest

from mmrag.errors import InvalidInput, Overloaded
from mmrag.generate.admission import AdmissionController, lane_of


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def controller(**kw: object) -> tuple[AdmissionController, Clock]:
    clock = Clock()
    args: dict = dict(max_queue_requests=100, queue_timeout_s=10.0, starvation_s=1.0, clock=clock)
    args.update(kw)
    return AdmissionController(1000, **args), clock


def test_admits_by_tokens_not_by_count() -> None:
    ac, _ = controller()
    small = [ac.submit(f"s{i}", 100) for i in range(10)]
    assert all(t.admitted.is_set() for t in small) and ac.used_tokens == 1000
    extra = ac.submit("x", 1)
    assert not extra.admitted.is_set()
    ac.release(small[0])
    assert extra.admitted.is_set() and ac.peak_used <= 1000


def test_request_larger_than_budget_is_invalid() -> None:
    ac, _ = controller()
    with pytest.raises(InvalidInput, match="budget is 1000"):
        ac.submit("big", 1001)


def test_full_queue_raises_overloaded_with_retry_after() -> None:
    ac, _ = controller(max_queue_requests=2)
    ac.submit("run", 1000)
    ac.submit("q1", 500)
    ac.submit("q2", 500)
    with pytest.raises(Overloaded) as err:
        ac.submit("q3", 10)
    assert err.value.retry_after >= 1.0
    ac2, _ = controller(max_queue_tokens=600)
    ac2.submit("run", 1000)
    ac2.submit("q1", 500)
    with pytest.raises(Overloaded):
        ac2.submit("q2", 200)


def test_text_request_passes_queued_image_requests() -> None:
    ac, _ = controller()
    running = ac.submit("img0", 700)
    img1 = ac.submit("img1", 700)  # waits: 300 free
    text = ac.submit("text", 100)  # different lane, fits: admitted past img1 (backfill)
    assert text.admitted.is_set() and not img1.admitted.is_set()
    ac.release(running)
    assert img1.admitted.is_set()


def test_fcfs_blocks_behind_the_head() -> None:
    ac, _ = controller(policy="fcfs")
    ac.submit("img0", 700)
    ac.submit("img1", 700)
    text = ac.submit("text", 100)
    assert not text.admitted.is_set()


def test_fair_order_interleaves_lanes() -> None:
    ac, _ = controller()
    hold = ac.submit("hold", 1000)
    images = [ac.submit(f"img{i}", 600) for i in range(3)]
    texts = [ac.submit(f"t{i}", 50) for i in range(3)]
    ac.release(hold)
    # the first image's tag is oldest; all texts (cheap lane) come before the second image
    assert images[0].admitted.is_set() and all(t.admitted.is_set() for t in texts)
    assert not images[1].admitted.is_set()


def test_head_stops_being_overtaken_after_starvation_s() -> None:
    ac, clock = controller(starvation_s=1.0)
    a = ac.submit("a", 500)
    big = ac.submit("big", 900)  # same lane as a: tag 500
    texts = [ac.submit(f"t{i}", 100) for i in range(5)]  # tags 0..400: ahead of big, fill the budget
    assert all(t.admitted.is_set() for t in texts)
    for t in texts:
        ac.release(t)
    t6 = ac.submit("t6", 100)  # tag 500, after big: big is the head, does not fit, t6 backfills
    assert t6.admitted.is_set() and not big.admitted.is_set()
    clock.t = 1.5
    t7 = ac.submit("t7", 100)
    assert not t7.admitted.is_set()  # the head has waited starvation_s: no more overtaking
    ac.release(a)
    assert big.admitted.is_set() and ac.used_tokens == 1000


def test_expire_and_cancel() -> None:
    ac, clock = controller(queue_timeout_s=5.0)
    run = ac.submit("run", 1000)
    waiting = ac.submit("w", 10)
    other = ac.submit("o", 10)
    assert ac.cancel(other) and other.expired and ac.queued == 1
    clock.t = 6.0
    assert ac.expire() == [waiting] and waiting.expired and ac.queued == 0
    assert not ac.cancel(run)  # admitted: must be released instead
    ac.release(run)
    assert ac.used_tokens == 0


def test_budget_never_exceeded_under_random_load() -> None:
    import random

    rng = random.Random(0)
    ac, clock = controller(max_queue_requests=1000)
    submitted, released, peak = [], set(), 0  # the test's own books, not the controller's counters
    for i in range(2000):
        clock.t += 0.01
        running = [t for t in submitted if t.admitted.is_set() and t.request_id not in released]
        if rng.random() < 0.5 and running:
            ticket = running[rng.randrange(len(running))]
            ac.release(ticket)
            released.add(ticket.request_id)
        else:
            submitted.append(ac.submit(f"r{i}", rng.choice([30, 60, 400, 900])))
        in_flight = sum(t.cost for t in submitted if t.admitted.is_set() and t.request_id not in released)
        assert in_flight <= 1000
        peak = max(peak, in_flight)
    assert peak > 900  # the load really filled the budget
    assert sum(t.admitted.is_set() for t in submitted) > 500  # and requests kept being admitted


def test_lanes() -> None:
    assert lane_of(100) < lane_of(5000) and lane_of(1) == 0
