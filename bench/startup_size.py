"""Start-up to ready against corpus size (issue 41): fresh processes opening data folders of different sizes.

Each start is bench/_scale_startup.py (what ``mmrag serve`` does before it answers: settings, ``build_pipeline``,
the warm-up, then the corpus's first search), in rounds that alternate the folders' order (ABBA). Per folder:
seconds to the pipeline built, to warmed up (the models and rankers the corpora use: no corpus's vectors), the
corpus's collection opened by its first use (segments, id tracker, the in-RAM sparse indexes) and ready (its
first answer); and the memory after the suite's queries. The files are in the page cache after the first round
(a start after a reboot also reads the shard from disk: not measured).

    python -m bench.startup_size /work/data-mem/exp5k /work/data-mem/exp50k [--corpus sec10q] [--rounds 3]

Ends with ``RESULT open_ratio=.. open_s=.. ready_s=.. ready_ratio=..`` (the largest folder against the smallest;
medians with 95 % intervals over the rounds).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench._scale_measure import startup
from bench._stats import machine_line, result_line
from mmrag.evaluate.stats import Estimate, interval, ratio_interval
from mmrag.evaluate.suite import load_suite

PHASES = {"imports": "imports_s", "build": "built_s", "warm_up": "warm_s", "open": "opened_s",
          "first_search": "ready_s"}  # phase -> the start's field that says when it ended


def phases(start: dict[str, float]) -> dict[str, float]:
    """Seconds spent in each phase of one start (each phase's end minus the previous one's)."""
    out, before = {}, 0.0
    for phase, end in PHASES.items():
        out[phase] = start[end] - before
        before = start[end]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+", help="data folders, smallest corpus first")
    ap.add_argument("--corpus", default="sec10q")
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    queries = [q.text for q in load_suite(args.suite).queries][:40]
    runs: dict[Path, list[dict[str, float]]] = {f: [] for f in args.folders}
    print(machine_line(), flush=True)
    for r in range(args.rounds):
        for folder in args.folders if r % 2 == 0 else args.folders[::-1]:
            start = startup(folder, args.corpus, queries)
            runs[folder].append(phases(start) | {"ready": start["ready_s"], "pss_gb": start["pss_gb"],
                                                 "rss_gb": start["rss_gb"]})
            print(f"round {r + 1} {folder.name}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[folder][-1].items()),
                  flush=True)
    for folder, rows in runs.items():
        print(f"{folder.name} medians: " + ", ".join(f"{k} {statistics.median(x[k] for x in rows):.2f}"
                                                     for k in rows[0]))
    small, large = runs[args.folders[0]], runs[args.folders[-1]]
    values: dict[str, Estimate | float] = {
        "open_ratio": ratio_interval([x["open"] for x in large], [x["open"] for x in small]),
        "open_s": interval([x["open"] for x in large]),
        "ready_s": interval([x["ready"] for x in large]),
        "ready_ratio": ratio_interval([x["ready"] for x in large], [x["ready"] for x in small]),
        "pss_gb": statistics.median(x["pss_gb"] for x in large),
    }
    print(machine_line())
    print(result_line(values))


if __name__ == "__main__":
    main()
