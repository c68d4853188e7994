"""Weight sweep of the document stage (issue 15): which settings, chosen on half the questions, hold on the other half?

A grid over the document stage's settings (``RankingConfig``: document_weight, prior_strength,
document_candidates; any field of it with ``--grid``) runs through the real
``Pipeline.search`` of an ingested sec-10q data folder: the pipeline is built once and each grid point
replaces the retriever's config (``merge_settings`` of the point's ``retrieve`` overrides; no model is
rebuilt). Every point is scored (document level nDCG@5, the suite's request: all its spaces, its top_k)
on the odd-numbered questions only; the best there is the chosen point, then scored on the held-out
even-numbered questions, next to the configured defaults and the page spaces alone (document stage off)
on the same questions. Intervals: 95 % bootstrap over the held-out questions (means; the differences
paired). Quality is deterministic, so there are no rounds.

Needs a data folder where the suite was ingested (read only)::

    mmrag eval run eval/suites/sec-10q --data-dir /tmp/sec10q --no-plots
    python -m bench.doc_weights --data-dir /tmp/sec10q [--grid document_weight=0,1,2 --grid prior_strength=0,8]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
from typing import Any

from bench._stats import machine_line, result_line
from bench._suite_data import open_search_pipeline, suite_data_args
from mmrag.config import Settings, merge_settings
from mmrag.evaluate.scale import question_scores
from mmrag.evaluate.stats import Estimate, interval, mean_stat
from mmrag.evaluate.suite import Query, Suite, load_suite
from mmrag.pipeline import Pipeline
from mmrag.retrieve_config import RetrieveConfig
from mmrag.types import SearchRequest

DEFAULT_GRID: dict[str, list[Any]] = {
    "document_weight": [0.5, 1.0, 2.0],
    "prior_strength": [0.0, 2.0, 4.0, 8.0, 16.0],
    "document_candidates": [1000],
}
"""The default grid (fields the current RetrieveConfig lacks are left out)."""
QUICK_GRID: dict[str, list[Any]] = {"document_weight": [1.0, 2.0], "prior_strength": [0.0, 8.0]}


def parse_grid(items: list[str]) -> dict[str, list[Any]]:
    """``name=v1,v2`` per item -> {name: values}; names must be RetrieveConfig fields, values valid for them."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or name not in RetrieveConfig.model_fields:
            raise SystemExit(f"--grid wants NAME=V1,V2,... with NAME a RetrieveConfig field; got {item!r}")
        grid[name] = [getattr(RetrieveConfig.model_validate({name: v}), name) for v in values.split(",")]
    return grid


def grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    names = [n for n in grid if n in RetrieveConfig.model_fields]
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]


def halves(suite: Suite) -> tuple[list[Query], list[Query]]:
    """(odd-numbered, even-numbered) judged questions, by the number in their id."""
    judged = [q for q in suite.queries if suite.qrels.get(q.id)]
    number = {q.id: int(re.sub(r"\D", "", q.id) or 0) for q in judged}
    return [q for q in judged if number[q.id] % 2], [q for q in judged if not number[q.id] % 2]


def scores_with(pipeline: Pipeline, settings: Settings, overrides: dict[str, Any], suite: Suite,
                questions: list[Query], template: SearchRequest) -> list[float]:
    """Per-question nDCG@5 with the retriever's config replaced by ``settings`` + ``overrides``."""
    pipeline.retriever.config = merge_settings(settings, {"retrieve": {"ranking": overrides}}).retrieve
    return question_scores(pipeline, suite, questions, template)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    suite_data_args(ap)
    ap.add_argument("--grid", action="append", default=[],
                    help="NAME=V1,V2,... (repeatable; replaces the default grid)")
    ap.add_argument("--quick", action="store_true", help="a 2x2 grid (document_weight, prior_strength)")
    args = ap.parse_args()

    settings, pipeline = open_search_pipeline(args.data_dir)
    try:
        suite = load_suite(args.suite)
        tune, held = halves(suite)
        spec = suite.spec.pipeline
        template = SearchRequest(query="", top_k=spec.top_k, spaces=spec.spaces)
        points = grid_points(parse_grid(args.grid) if args.grid else QUICK_GRID if args.quick else DEFAULT_GRID)
        print(f"{len(points)} grid points; tuned on {len(tune)} odd-numbered questions, "
              f"held out: {len(held)} even-numbered")
        print(machine_line())
        tuned = []
        for point in points:
            value = statistics.mean(scores_with(pipeline, settings, point, suite, tune, template))
            tuned.append((value, point))
            print(json.dumps({**point, "tune_ndcg5": round(value, 4)}), flush=True)
        best_value, best = max(tuned, key=lambda t: t[0])  # the first of equal points wins (grid order)
        chosen = scores_with(pipeline, settings, best, suite, held, template)
        default = scores_with(pipeline, settings, {}, suite, held, template)
        pages = scores_with(pipeline, settings, {"document_stage": False}, suite, held, template)
        defaults = settings.retrieve.model_dump(include=set(best))
        print(f"chosen on the odd questions: {best} (tune nDCG@5 {best_value:.3f}); defaults: {defaults}")
        values: dict[str, Estimate | float | int | str] = {f"chosen_{k}": v for k, v in best.items()}
        values.update(
            tune_ndcg5=best_value,
            heldout_ndcg5=interval(chosen, mean_stat),
            default_heldout_ndcg5=interval(default, mean_stat),
            pages_heldout_ndcg5=interval(pages, mean_stat),
            chosen_minus_default=interval([a - b for a, b in zip(chosen, default, strict=True)], mean_stat),
            heldout_questions=len(held),
        )
        print(machine_line())
        print(result_line(values))
    finally:
        pipeline.retriever.config = settings.retrieve
        pipeline.close()


if __name__ == "__main__":
    main()
