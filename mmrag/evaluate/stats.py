"""Statistics for reports and comparisons: latency percentiles, paired bootstrap, permutation test.

All functions are pure and seedable (``numpy.random.default_rng(seed)``), so a
comparison run twice with the same seed gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Summary of one stage's latencies, in seconds."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def latency_stats(samples: Sequence[float]) -> LatencyStats:
    """Count, mean, p50/p95/p99 (linear interpolation) and max of ``samples``."""
    if not samples:
        return LatencyStats(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    values = np.asarray(samples, dtype=float)
    p50, p95, p99 = (float(v) for v in np.percentile(values, [50, 95, 99]))
    return LatencyStats(len(values), float(values.mean()), p50, p95, p99, float(values.max()))


def stage_latency_stats(timings: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Per-stage stats over many ``{stage: seconds}`` dicts (a stage may be absent from some)."""
    by_stage: dict[str, list[float]] = {}
    for entry in timings:
        for stage, seconds in entry.items():
            by_stage.setdefault(stage, []).append(float(seconds))
    return {stage: latency_stats(values).to_dict() for stage, values in sorted(by_stage.items())}


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """B minus A on one metric over the queries both runs share."""

    mean_a: float
    mean_b: float
    delta: float  # mean(B - A)
    ci_low: float  # bootstrap percentile interval of delta
    ci_high: float
    p_value: float  # two-sided paired randomisation (sign-flip) test
    n: int  # paired queries

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def paired_bootstrap_ci(
    diffs: Sequence[float], *, samples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired differences (queries resampled)."""
    values = np.asarray(diffs, dtype=float)
    if values.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, values.size, size=(samples, values.size))
    means = values[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def paired_permutation_p(diffs: Sequence[float], *, samples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(diffs) != 0 by random sign flips, ``(hits + 1) / (samples + 1)``.

    Identical runs (all differences 0) give p = 1.
    """
    values = np.asarray(diffs, dtype=float)
    if values.size == 0:
        return 1.0
    observed = abs(values.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(samples, values.size))
    permuted = np.abs((signs * values).mean(axis=1))
    hits = int(np.count_nonzero(permuted >= observed - 1e-12))
    return (hits + 1) / (samples + 1)


def compare_paired(
    a: Sequence[float],
    b: Sequence[float],
    *,
    samples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Paired comparison of per-query values ``a`` and ``b`` (same order, same queries)."""
    if len(a) != len(b):
        raise ValueError(f"paired values differ in length: {len(a)} vs {len(b)}")
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diffs = vb - va
    low, high = paired_bootstrap_ci(diffs, samples=samples, confidence=confidence, seed=seed)
    p_value = paired_permutation_p(diffs, samples=samples, seed=seed)
    n = int(va.size)
    return PairedComparison(
        mean_a=float(va.mean()) if n else 0.0,
        mean_b=float(vb.mean()) if n else 0.0,
        delta=float(diffs.mean()) if n else 0.0,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        n=n,
    )


@dataclass(frozen=True, slots=True)
class Ratio:
    """``mean(large) / mean(small)`` over paired questions, with its percentile-bootstrap interval."""

    value: float
    lo: float
    hi: float
    n: int  # paired questions


def ratio_of_means(large: Sequence[float], small: Sequence[float], *, samples: int = 10_000,
                   confidence: float = 0.95, seed: int = 0) -> Ratio:
    """The ratio of means of two paired samples; the bootstrap resamples questions (both arms alike)."""
    a, b = np.asarray(large, dtype=float), np.asarray(small, dtype=float)
    if a.size == 0 or a.size != b.size:
        raise ValueError(f"paired samples needed, got {a.size} and {b.size} values")
    idx = np.random.default_rng(seed).integers(0, a.size, size=(samples, a.size))  # (samples, n)
    boot = a[idx].mean(axis=1) / np.maximum(b[idx].mean(axis=1), 1e-12)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return Ratio(float(a.mean() / max(b.mean(), 1e-12)), float(lo), float(hi), int(a.size))
