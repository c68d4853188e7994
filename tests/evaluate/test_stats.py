"""Paired bootstrap, permutation test and latency percentiles."""

from __future__ import annotations

import numpy as np
import pytest

from mmrag.evaluate.stats import compare_paired, latency_stats, paired_permutation_p, stage_latency_stats


def test_identical_runs_have_zero_delta_and_ci_containing_zero() -> None:
    values = list(np.random.default_rng(0).random(50))
    result = compare_paired(values, values, samples=2000, seed=1)
    assert result.delta == 0.0
    assert result.ci_low <= 0.0 <= result.ci_high
    assert result.p_value == 1.0


def test_clearly_better_run_has_ci_excluding_zero_and_small_p() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(60) * 0.5
    b = a + 0.2 + rng.normal(0, 0.05, 60)
    result = compare_paired(list(a), list(b), samples=5000, seed=2)
    assert result.delta == pytest.approx(float(np.mean(b - a)))
    assert result.ci_low > 0.0
    assert result.p_value < 0.001
    worse = compare_paired(list(b), list(a), samples=5000, seed=2)
    assert worse.ci_high < 0.0


def test_noise_only_difference_is_not_significant() -> None:
    rng = np.random.default_rng(5)
    a = rng.random(40)
    noise = rng.normal(0, 0.1, 40)
    b = a + noise - noise.mean()  # paired differences with mean exactly 0
    result = compare_paired(list(a), list(b), samples=4000, seed=3)
    assert result.ci_low < 0.0 < result.ci_high
    assert result.p_value > 0.5


def test_same_seed_same_numbers_and_errors() -> None:
    a, b = [0.1, 0.5, 0.3, 0.9], [0.2, 0.4, 0.6, 1.0]
    assert compare_paired(a, b, seed=7) == compare_paired(a, b, seed=7)
    with pytest.raises(ValueError, match="length"):
        compare_paired([1.0], [1.0, 2.0])
    assert paired_permutation_p([]) == 1.0


def test_latency_stats() -> None:
    stats = latency_stats([float(i) for i in range(1, 101)])
    assert stats.count == 100
    assert stats.p50 == pytest.approx(50.5)
    assert stats.p95 == pytest.approx(95.05)
    assert stats.p99 == pytest.approx(99.01)
    assert stats.max == 100.0
    assert latency_stats([]).count == 0
    per_stage = stage_latency_stats([{"embed": 0.1, "total": 0.3}, {"total": 0.5}])
    assert per_stage["embed"]["count"] == 1
    assert per_stage["total"]["mean"] == pytest.approx(0.4)
