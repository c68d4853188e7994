"""ThreadPicker: the thread count is chosen from measurements, per batch-size class."""

from __future__ import annotations

from mmrag.embed.threads import ThreadPicker, candidates


def run(picker: ThreadPicker, items: int, cost: dict[int, float], n: int) -> list[int]:
    """``n`` batches of ``items``; a batch on t threads takes cost[t] seconds per token."""
    chosen = []
    for _ in range(n):
        t = picker.choose(items)
        picker.record(items, t, cost[t] * items * 10, items * 10)
        chosen.append(t)
    return chosen


def test_candidates() -> None:
    assert candidates(3) == [3]
    assert candidates(0, cores=2) == [1, 2] and candidates(0, cores=8) == [1, 7, 8] and candidates(0, cores=1) == [1]


def test_picks_the_faster_count_and_re_measures_the_other() -> None:
    picker = ThreadPicker([1, 2], explore_every=8, hopeless=3.0, clock=lambda: 0.0)
    chosen = run(picker, 32, {1: 2e-3, 2: 1e-3}, 64)
    assert chosen[:2] == [1, 2]  # each measured once first
    assert chosen[2:].count(2) > 0.8 * len(chosen[2:])  # then mostly the faster one
    assert 2 <= chosen[2:].count(1) <= 10  # but the slower one is re-measured now and then
    assert picker.snapshot()["batches_by_threads"] == {1: chosen.count(1), 2: chosen.count(2)}


def test_size_classes_are_measured_apart() -> None:
    picker = ThreadPicker([1, 2], explore_every=8, hopeless=3.0, clock=lambda: 0.0)
    single = run(picker, 1, {1: 1e-3, 2: 5e-3}, 20)  # single items: one thread is faster
    full = run(picker, 32, {1: 2e-3, 2: 1e-3}, 20)  # full batches: two are
    assert single[2:].count(1) >= 16 and full[2:].count(2) >= 15


def test_follows_a_change_of_load() -> None:
    picker = ThreadPicker([1, 2], explore_every=4, hopeless=100.0, clock=lambda: 0.0)
    before = run(picker, 32, {1: 2e-3, 2: 1e-3}, 20)
    assert before[-10:].count(2) >= 7
    later = run(picker, 32, {1: 2e-3, 2: 8e-3}, 40)  # another process now holds a core
    assert later[-10:].count(1) >= 8


def test_a_hopeless_count_is_re_measured_rarely() -> None:
    picker = ThreadPicker([1, 2], explore_every=8, hopeless=1.5, clock=lambda: 0.0)
    chosen = run(picker, 32, {1: 2e-3, 2: 1e-3}, 66)  # 1 thread is 2x slower: beyond "hopeless"
    assert chosen[2:].count(1) == 2  # every 4 x 8 batches


def test_one_good_batch_restores_a_count_that_was_slow_for_a_while() -> None:
    picker = ThreadPicker([1, 2], explore_every=4, hopeless=100.0, clock=lambda: 0.0)
    run(picker, 32, {1: 2e-3, 2: 10e-3}, 12)  # 2 threads collapsed (another process held a core)
    assert picker.snapshot()["us_per_token"]["32+"][2] > 2000  # type: ignore[index]
    later = run(picker, 32, {1: 2e-3, 2: 1e-3}, 12)  # the machine is free again
    assert later[-6:].count(2) >= 5  # one good re-measurement was enough to switch back


def test_a_slow_class_is_re_measured_after_explore_s_too() -> None:
    now = [0.0]
    picker = ThreadPicker([1, 2], explore_every=1000, explore_s=5.0, hopeless=100.0, clock=lambda: now[0])
    run(picker, 32, {1: 2e-3, 2: 1e-3}, 4)
    assert run(picker, 32, {1: 2e-3, 2: 1e-3}, 3) == [2, 2, 2]  # neither 1000 batches nor 5 s yet
    now[0] = 6.0
    assert 1 in run(picker, 32, {1: 2e-3, 2: 1e-3}, 2)  # 5 s passed: the other count is measured again
