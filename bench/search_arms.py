"""Search latency of this tree against another tree's code (e.g. main's), on one ingested corpus: the product's
default search (every space of the corpus, the document stage, the learned ranker), in-process, no HTTP.

Arms, each a fresh subprocess per round (``bench/search_arm.py``; model load, warm-up and the first
``--warm`` searches not timed), order ABBA-alternated over ``--rounds``:

- ``new``: this tree;
- ``base``: ``--base``, a tree exported with ``git archive`` (default: the merge base with main, as
  ``bench.ingest`` makes it), run with ``PYTHONPATH`` on it.

A round's value per arm is the median of its searches (every question of ``--suite`` once, up to
``--queries``); ``p50_ratio`` is new / base per round, ``cpu_ratio`` the same of the searches' CPU time (every
thread of the process), which other work on the machine moves less than the wall clock::

    python -m bench.search_arms --data-dir DIR --corpus eval-filings --suite eval/suites/filings [--rounds 6]

ends with ``RESULT p50_ratio=.. new_p50_ms=.. base_p50_ms=.. cpu_ratio=..`` (medians over rounds, 95 % bootstrap
intervals).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path

from bench._stats import alternate, machine_line, result_line, verdict
from bench.ingest import ROOT, base_tree, run_in_tree
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.evaluate.suite import load_suite


def run_arm(tree: Path, spec: dict[str, object]) -> dict[str, list[float]]:
    return run_in_tree(tree, "search_arm.py", spec)


def p50_of(tree: Path, spec: dict[str, object], cpu: list[float]) -> Callable[[int], float]:
    """One round of an arm: the median milliseconds of its searches (their median CPU milliseconds appended to
    ``cpu``)."""
    def one(_round: int) -> float:
        got = run_arm(tree, spec)
        cpu.append(statistics.median(got["cpu_ms"]))
        return statistics.median(got["ms"])
    return one


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="data folder holding the ingested corpus (read only)")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--suite", default="eval/suites/filings", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--base", help="folder of the other tree (default: git archive of the merge base with main)")
    args = ap.parse_args()
    print(machine_line(), flush=True)
    spec = {"data_dir": str(args.data_dir.resolve()), "corpus": args.corpus, "warm": args.warm,
            "queries": [q.text for q in load_suite(args.suite).queries][:args.queries]}
    trees = {"new": ROOT, "base": base_tree(args.base)}
    cpu: dict[str, list[float]] = {arm: [] for arm in trees}
    p50 = alternate({arm: p50_of(tree, spec, cpu[arm]) for arm, tree in trees.items()}, args.rounds)
    ratio = interval(paired_ratios(p50["new"], p50["base"]))
    print(verdict("p50_ratio", ratio, 1.2, at_least=False))
    print(result_line({"p50_ratio": ratio, "new_p50_ms": interval(p50["new"]), "base_p50_ms": interval(p50["base"]),
                       "cpu_ratio": interval(paired_ratios(cpu["new"], cpu["base"])),
                       "new_cpu_ms": interval(cpu["new"]), "base_cpu_ms": interval(cpu["base"]),
                       "rounds": args.rounds, "queries": len(spec["queries"])}))


if __name__ == "__main__":
    main()
