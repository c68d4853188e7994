"""The statistics every benchmark shares: alternating rounds, seeded bootstrap intervals, RESULT lines.

Design of a measurement (every ``bench/*.py``):

* the arms of a comparison run in **alternating rounds** (:func:`alternate`): round r runs the arms
  in order A, B when r is even and B, A when r is odd (ABBA), so drift and background load on the
  shared machine hit both arms alike;
* a round gives one value per arm, or one paired value (e.g. ``B / A`` of that round);
* each RESULT value is the **median** over rounds (or over requests, for latency percentiles) with
  a 95 % percentile-bootstrap interval (:func:`interval`), seeded so a rerun on the same data
  prints the same interval;
* :func:`result_line` prints ``RESULT name=<median> name_lo=<lo> name_hi=<hi> ...``. A target
  counts as met only when its conservative bound meets it (``lo`` for "at least", ``hi`` for "at
  most"): :meth:`Estimate.meets`;
* every RESULT line ends with the 1-minute load average when the benchmark started and when it
  printed (``load_before=… load_after=…``) and ``loaded=1`` when the load before the run (other
  work on the machine; the benchmark's own load shows only after) exceeded the core count: such a
  run does not count as meeting any target (:func:`verdict` says so).

Bootstrap over rounds when the paired unit is a round; over requests when the value is a percentile
of request latencies (:func:`ratio_interval` resamples the two arms' requests independently).
Mean-of-differences comparisons of evaluation runs live in :mod:`mmrag.evaluate.stats`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Statistic = Callable[[np.ndarray], np.ndarray]  # (resamples, n) -> (resamples,)
BOOTSTRAP_SAMPLES = 4000
CONFIDENCE = 0.95
CORES = os.cpu_count() or 1
# the 1-minute load average when this module was imported: the load before the benchmark started
LOAD_BEFORE = os.getloadavg()[0]


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
    n: int  # rounds or requests it came from

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


def alternate(
    arms: Mapping[str, Callable[[int], float]], rounds: int, *, log: Callable[[str], None] | None = print
) -> dict[str, list[float]]:
    """Run every arm once per round, order ABBA-alternated; ``arm(round) -> value``; values per arm."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    names = list(arms)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            out[name].append(arms[name](r))
        if log is not None:
            log(f"round {r + 1}/{rounds}: " + " | ".join(f"{n} {out[n][-1]:.4g}" for n in names)
                + f" | load {os.getloadavg()[0]:.1f}")
    return out


def loaded() -> bool:
    """Whether the machine was busy with other work when the benchmark started (load above the cores)."""
    return LOAD_BEFORE > CORES


def result_line(values: Mapping[str, Estimate | float | int | str], digits: int = 3) -> str:
    """``RESULT a=.. a_lo=.. a_hi=.. b=.. load_before=.. load_after=.. loaded=0|1``: estimates with
    their bounds, plain values as they are, then the load (a ``loaded=1`` run counts for no target)."""
    parts = []
    for name, v in values.items():
        if isinstance(v, Estimate):
            parts.append(v.fields(name, digits))
        elif isinstance(v, float):
            parts.append(f"{name}={v:.{digits}f}")
        else:
            parts.append(f"{name}={v}")
    parts.append(f"load_before={LOAD_BEFORE:.2f} load_after={os.getloadavg()[0]:.2f} loaded={int(loaded())}")
    return "RESULT " + " ".join(parts)


def machine_line() -> str:
    """Cores and the 1-minute load average now and when the benchmark started (printed next to every result)."""
    return (f"machine: {CORES} CPUs, load average {os.getloadavg()[0]:.2f} at {time.strftime('%H:%M:%S')} "
            f"(at start {LOAD_BEFORE:.2f})")


def verdict(name: str, est: Estimate, target: float, *, at_least: bool) -> str:
    """One line saying whether the conservative bound meets the target."""
    bound, op = (est.lo, ">=") if at_least else (est.hi, "<=")
    ok = "met" if est.meets(target, at_least=at_least) else "NOT met"
    if loaded() and ok == "met":
        ok = f"not counted (load {LOAD_BEFORE:.1f} above {CORES} cores at start)"
    return f"target {name} {op} {target}: {ok} (conservative bound {bound:.3f}, median {est.value:.3f})"
