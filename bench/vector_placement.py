"""Search latency on two data folders grown alike whose segments place their vectors differently (issue 42): a
folder grown before 356592c loads its original vectors whole (the engine's ``Cached``), one grown after maps them
and reads what searches touch (``Cold``, ``on_disk``). A shard keeps the placement its segments were made with, so
one process opens both folders and the comparison is of placements, not of code.

    python -m bench.scale --grow-only --sizes 5000 --data-dir A   # at a commit before 356592c (Cached)
    python -m bench.scale --grow-only --sizes 5000 --data-dir B   # at this one (Cold)
    python -m bench.vector_placement --a A --b B [--corpus sec10q] [--rounds 3] [--queries 40]

The product's default search (``Retriever.search``, hybrid with the ranker) after each folder's warm-up, every
query once per folder per round, the folders alternated query by query (ABBA across rounds). Ends with ``RESULT
b_over_a_p50=.. b_over_a_p50_lo=.. b_over_a_p50_hi=.. a_p50_ms=.. b_p50_ms=.. a_rss_file_mb=..`` and the load.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from bench._scale_measure import Searchers
from bench._stats import machine_line, result_line
from bench.scale import search_settings
from mmrag.evaluate.stats import interval, ratio_interval
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline


def rss_file_mb() -> float:
    """This process's file-backed resident memory (the mapped shards, libraries), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", type=Path, required=True, help="the folder grown before (Cached)")
    ap.add_argument("--b", type=Path, required=True, help="the folder grown after (Cold)")
    ap.add_argument("--corpus", default="sec10q")
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    queries = [q.text for q in load_suite(args.suite).queries][: args.queries]
    print(machine_line(), flush=True)
    searchers, file_mb = {}, {}
    for name, folder in (("a", args.a), ("b", args.b)):
        before = rss_file_mb()
        pipeline = build_pipeline(search_settings(folder), run_jobs=False)
        pipeline.warm_up()
        searchers[name] = Searchers.of(pipeline)
        search, request = searchers[name].request("hybrid_ranker", queries[0], "")
        search(args.corpus, request)
        file_mb[name] = rss_file_mb() - before
        print(f"{name}: {folder}, file-backed memory after its first search +{file_mb[name]:.0f} MB", flush=True)
    ms: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(args.rounds):
        for q in queries:
            for name in ("a", "b") if r % 2 == 0 else ("b", "a"):
                search, request = searchers[name].request("hybrid_ranker", q, "")
                t0 = time.perf_counter()
                search(args.corpus, request)
                ms[name].append((time.perf_counter() - t0) * 1000)
        print(f"round {r + 1}/{args.rounds}: a p50 {np.median(ms['a']):.1f} ms | b p50 {np.median(ms['b']):.1f} ms "
              f"| load {os.getloadavg()[0]:.1f}", flush=True)
    for s in searchers.values():
        s.pipeline.close()
    print(machine_line())
    print(result_line({"b_over_a_p50": ratio_interval(ms["b"], ms["a"]), "a_p50_ms": interval(ms["a"]),
                       "b_p50_ms": interval(ms["b"]), "a_rss_file_mb": round(file_mb["a"]),
                       "b_rss_file_mb": round(file_mb["b"])}))


if __name__ == "__main__":
    main()
