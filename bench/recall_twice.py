"""Recall and repeatability of the default plan's first stage on a grown corpus (issues 40 and 41): for each
query, the plan's top 10 by page ids as it ships against the exhaustive plan (``QueryNode.exact`` on every
stage: a full scan), and each of them built and run again (the document stage's choice included) against its
first run; each cut as the product cuts it (ties at the cut by page id: ``bench._scale_measure.first_stage``).
Not a timing::

    python -m bench.recall_twice --data-dir /work/data-det/exp50k --corpus sec10q --queries 20

``RESULT recall10 agree_exact_twice agree_twice`` (means over queries, intervals by bootstrap over queries) and
``identical_exact_twice``: the queries whose exhaustive top 10 came back identical, in order.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench._scale_measure import first_stage
from bench._stats import machine_line, result_line
from bench.scale import search_settings
from mmrag.evaluate.stats import interval, mean_stat
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline

K = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--corpus", default="sec10q")
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=20)
    args = ap.parse_args()
    print(machine_line(), flush=True)
    queries = [q.text for q in load_suite(args.suite).queries][:args.queries]
    pipeline = build_pipeline(search_settings(args.data_dir))
    r = pipeline.retriever

    def top(query: str, exhaustive: bool) -> list[str]:
        return [h.id for h in first_stage(r, args.corpus, query, K, payload=[], exhaustive=exhaustive)]

    recall, agree_exact, agree, identical = [], [], [], 0
    try:
        for i, q in enumerate(queries):
            shipped, full = top(q, False), top(q, True)
            shipped2, full2 = top(q, False), top(q, True)
            recall.append(len(set(shipped) & set(full)) / max(len(full), 1))
            agree_exact.append(len(set(full) & set(full2)) / max(len(full), 1))
            agree.append(len(set(shipped) & set(shipped2)) / max(len(shipped), 1))
            identical += full == full2
            print(f"  {i + 1}/{len(queries)} recall {recall[-1]:.2f} exhaustive twice {agree_exact[-1]:.2f} "
                  f"shipped twice {agree[-1]:.2f}", flush=True)
    finally:
        pipeline.close()
    print(result_line({"recall10": interval(recall, mean_stat), "recall10_min": min(recall),
                       "agree_exact_twice": interval(agree_exact, mean_stat), "agree_twice": interval(agree, mean_stat),
                       "identical_exact_twice": identical, "queries": len(queries)}))


if __name__ == "__main__":
    main()
