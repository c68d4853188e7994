"""What every benchmark shares: alternating rounds, the machine's load, RESULT lines. The seeded bootstrap
intervals (:func:`interval`, :class:`Estimate`) are the evaluation's own, in :mod:`mmrag.evaluate.stats`.

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
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from mmrag.evaluate.stats import Estimate, interval, paired_ratios

CORES = os.cpu_count() or 1
# the 1-minute load average when this module was imported: the load before the benchmark started
LOAD_BEFORE = os.getloadavg()[0]


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


def paired_result(name: str, label: str, times: Mapping[str, list[float]], arm: str, base: str, target: float, *,
                  at_least: bool, extra: Mapping[str, Estimate | float | int | str] | None = None) -> None:
    """The end of a two-arm benchmark: ``arm / base`` per round as ``name`` (its verdict against ``target``),
    the machine's load, and the RESULT line with ``name``, each arm's seconds (``<base>_s``, ``<arm>_s``)
    and ``extra``."""
    ratio = interval(paired_ratios(times[arm], times[base]))
    print(machine_line())
    print(verdict(f"{name} ({label})", ratio, target, at_least=at_least))
    print(result_line({name: ratio, f"{base}_s": interval(times[base]), f"{arm}_s": interval(times[arm]),
                       **(extra or {})}))
