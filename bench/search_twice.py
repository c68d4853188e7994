"""Determinism check (issue 40): a suite's questions searched twice in one process, and against the rankings
another process wrote (``--against``: the ``--out`` of an earlier run of this script), each question within
its scope, as the suite runs it. Prints how many rankings (pages and scores to 6 decimals) are identical; not
a timing::

    python -m bench.search_twice --suite eval/suites/mmlongbench-dev --data-dir DATA --questions 50 \\
        --out /tmp/first.json && python -m bench.search_twice ... --against /tmp/first.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench._stats import machine_line, result_line
from bench._suite_data import open_search_pipeline
from mmrag.evaluate.scope import scope_filters
from mmrag.evaluate.suite import load_suite
from mmrag.types import SearchRequest

Ranking = list[tuple[str, int, float]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--variant", default=None)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--questions", type=int, default=50, help="the first N judged questions")
    ap.add_argument("--against", type=Path, default=None, help="another process's --out")
    ap.add_argument("--out", type=Path, default=None, help="write this run's rankings (JSON) here")
    args = ap.parse_args()
    print(machine_line())
    suite = load_suite(args.suite, variant=args.variant)
    spec, ids = suite.spec.pipeline, suite.scope_ids()
    queries = [q for q in suite.queries if q.id in suite.qrels][:args.questions]
    _, pipeline = open_search_pipeline(args.data_dir)
    rounds: list[dict[str, Ranking]] = [{}, {}]
    try:
        for got in rounds:
            for q in queries:
                request = SearchRequest(query=q.text, top_k=spec.top_k, spaces=spec.spaces, weights=spec.weights,
                                        fusion=spec.fusion, rrf_k=spec.rrf_k, **scope_filters(q.scope, ids))
                got[q.id] = [(Path(e.filename).name, e.page, round(e.score, 6))
                             for e in pipeline.search(suite.corpus_name, request).evidence]
    finally:
        pipeline.close()
    values: dict[str, float | int | str] = {"questions": len(queries),
                                             "identical_twice": sum(rounds[0][k] == rounds[1][k] for k in rounds[0])}
    if args.against:
        theirs = {qid: [tuple(hit) for hit in ranking]
                  for qid, ranking in json.loads(args.against.read_text()).items() if qid in rounds[0]}
        values["compared"] = len(theirs)
        values["identical_other_process"] = sum(rounds[0][k] == v for k, v in theirs.items())
    if args.out:
        args.out.write_text(json.dumps(rounds[0]))
    print(result_line(values))


if __name__ == "__main__":
    main()
