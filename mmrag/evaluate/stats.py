"""The one statistics module: seeded percentile-bootstrap intervals (benchmarks and evaluation reports),
latency percentiles, paired comparisons with a permutation test.

All functions are pure and seedable (``numpy.random.default_rng(seed)``), so a
comparison run twice with the same seed gives the same numbers. The benchmarks' own parts (alternating
rounds, the machine's load, RESULT lines) are in ``bench/_stats.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

Statistic = Callable[[np.ndarray], np.ndarray]  # (resamples, n) -> (resamples,)
BOOTSTRAP_SAMPLES = 4000
CONFIDENCE = 0.95


def median_stat(x: np.ndarray) -> np.ndarray:
    return np.median(x, axis=-1)


def mean_stat(x: np.ndarray) -> np.ndarray:
    return np.mean(x, axis=-1)


def percentile_stat(q: float) -> Statistic:
    """The q-th percentile (0..100, linear interpolation) along the last axis."""
    return lambda x: np.percentile(x, q, axis=-1)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point value with its 95 % bootstrap interval."""

    value: float  # the statistic on all the data (the median, for rounds)
    lo: float  # lower bound of the interval
    hi: float  # upper bound of the interval
    n: int  # rounds, requests or questions it came from

    def meets(self, target: float, *, at_least: bool) -> bool:
        """Whether the conservative bound meets ``target`` (lo >= target, or hi <= target)."""
        return self.lo >= target if at_least else self.hi <= target

    def fields(self, name: str, digits: int = 3) -> str:
        f = f"{{:.{digits}f}}"
        return f"{name}={f.format(self.value)} {name}_lo={f.format(self.lo)} {name}_hi={f.format(self.hi)}"


def interval(
    values: Sequence[float],
    stat: Statistic = median_stat,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """``stat`` of ``values`` with a percentile-bootstrap interval (values resampled with replacement)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values to summarise")
    rng = np.random.default_rng(seed)
    lo, hi = _bounds(stat(x[rng.integers(0, x.size, size=(samples, x.size))]), confidence)
    return Estimate(float(stat(x[None, :])[0]), lo, hi, int(x.size))


def ratio_interval(
    numerator: Sequence[float],
    denominator: Sequence[float],
    stat: Statistic = median_stat,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """``stat(numerator) / stat(denominator)`` of two independent samples (e.g. the p99 of two arms'
    request latencies), each resampled on its own."""
    a, b = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("no values to summarise")
    rng = np.random.default_rng(seed)
    boot = stat(a[rng.integers(0, a.size, size=(samples, a.size))]) / stat(
        b[rng.integers(0, b.size, size=(samples, b.size))]
    )
    lo, hi = _bounds(boot, confidence)
    return Estimate(float(stat(a[None, :])[0] / stat(b[None, :])[0]), lo, hi, int(min(a.size, b.size)))


def _bounds(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates."""
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def paired_ratios(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """Per-round ratios of two arms measured in the same rounds."""
    if len(numerator) != len(denominator):
        raise ValueError(f"paired rounds differ in length: {len(numerator)} vs {len(denominator)}")
    return [a / b for a, b in zip(numerator, denominator, strict=True)]


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
    if len(diffs) == 0:
        return 0.0, 0.0
    est = interval(diffs, mean_stat, samples=samples, confidence=confidence, seed=seed)
    return est.lo, est.hi


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


def ratio_of_means(large: Sequence[float], small: Sequence[float], *, samples: int = 10_000,
                   confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """``mean(large) / mean(small)`` of two paired samples with its percentile-bootstrap interval; the
    bootstrap resamples questions (both arms alike)."""
    a, b = np.asarray(large, dtype=float), np.asarray(small, dtype=float)
    if a.size == 0 or a.size != b.size:
        raise ValueError(f"paired samples needed, got {a.size} and {b.size} values")
    idx = np.random.default_rng(seed).integers(0, a.size, size=(samples, a.size))  # (samples, n)
    lo, hi = _bounds(a[idx].mean(axis=1) / np.maximum(b[idx].mean(axis=1), 1e-12), confidence)
    return Estimate(float(a.mean() / max(b.mean(), 1e-12)), lo, hi, int(a.size))
