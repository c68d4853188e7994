"""The shared benchmark statistics: bootstrap intervals against scipy, ABBA order, RESULT format."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from bench import _stats
from bench._stats import alternate, result_line, verdict
from mmrag.evaluate.stats import Estimate, interval, paired_ratios, percentile_stat, ratio_interval


def test_median_interval_matches_scipy_percentile_bootstrap() -> None:
    values = np.random.default_rng(3).lognormal(0.0, 0.5, size=40)
    ours = interval(values, samples=20_000, seed=1)
    ref = stats.bootstrap((values,), np.median, n_resamples=20_000, method="percentile",
                          confidence_level=0.95, random_state=2).confidence_interval
    assert ours.value == pytest.approx(float(np.median(values)))
    width = ref.high - ref.low
    assert ours.lo == pytest.approx(ref.low, abs=0.1 * width)
    assert ours.hi == pytest.approx(ref.high, abs=0.1 * width)
    assert ours.lo < ours.value < ours.hi


def test_constant_rounds_give_a_point_interval_and_the_bounds_decide_targets() -> None:
    est = interval([1.25] * 5)
    assert (est.value, est.lo, est.hi, est.n) == (1.25, 1.25, 1.25, 5)
    wide = Estimate(1.0, 0.85, 1.1, 5)
    assert not wide.meets(0.9, at_least=True)  # median above the target, lower bound below it
    assert wide.meets(1.2, at_least=False) and not wide.meets(1.05, at_least=False)


def test_interval_is_seeded() -> None:
    values = [0.8, 0.9, 1.1, 1.0, 0.95, 1.3]
    assert interval(values, seed=7) == interval(values, seed=7)


def test_ratio_of_p99s_resamples_each_arm() -> None:
    a = np.arange(1, 101, dtype=float)  # p99 = 99.01
    b = 2 * a
    est = ratio_interval(a, b, percentile_stat(99))
    assert est.value == pytest.approx(0.5)
    assert est.lo < 0.5 < est.hi or est.lo == est.hi == 0.5
    assert paired_ratios([2.0, 3.0], [4.0, 6.0]) == [0.5, 0.5]


def test_alternate_runs_arms_in_abba_order() -> None:
    order: list[str] = []

    def arm(name: str) -> Callable[[int], float]:
        def run(r: int) -> float:
            order.append(name)
            return float(r)

        return run

    out = alternate({"a": arm("a"), "b": arm("b")}, 4, log=None)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert out == {"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 1.0, 2.0, 3.0]}


def test_result_line_prints_median_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stats, "LOAD_BEFORE", 0.25)
    monkeypatch.setattr(_stats.os, "getloadavg", lambda: (1.5, 1.0, 0.5))
    line = result_line({"ratio": Estimate(0.91234, 0.9, 0.95, 5), "violations": 0, "x": 1.5})
    assert line == ("RESULT ratio=0.912 ratio_lo=0.900 ratio_hi=0.950 violations=0 x=1.500 "
                    "load_before=0.25 load_after=1.50 loaded=0")


def test_a_run_started_on_a_busy_machine_is_flagged_and_meets_no_target(monkeypatch: pytest.MonkeyPatch) -> None:
    est = Estimate(1.2, 1.1, 1.3, 10)
    monkeypatch.setattr(_stats, "LOAD_BEFORE", _stats.CORES + 0.5)
    assert result_line({"r": est}).endswith("loaded=1")
    assert "not counted" in verdict("r", est, 1.0, at_least=True)
    monkeypatch.setattr(_stats, "LOAD_BEFORE", 0.1)
    assert result_line({"r": est}).endswith("loaded=0")
    assert ": met" in verdict("r", est, 1.0, at_least=True)


def test_paired_result_prints_the_ratio_its_verdict_and_each_arms_seconds(capsys) -> None:
    times = {"base": [1.0, 2.0, 1.0, 2.0, 1.0], "arm": [1.5, 3.0, 1.5, 3.0, 1.5]}
    _stats.paired_result("cost", "arm / base", times, "arm", "base", 2.0, at_least=False, extra={"n": 5})
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("target cost (arm / base) <= 2.0:")
    assert lines[2].startswith("RESULT cost=1.500 cost_lo=1.500 cost_hi=1.500 base_s=1.000 base_s_lo=")
    assert " arm_s=1.500 " in lines[2] and " n=5 " in lines[2]
