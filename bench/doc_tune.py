"""Tune and ablate the document stage on a page-judged suite (issue 19): right document first, document
nDCG@5 and page nDCG@5 per arm, through the real ``Pipeline.search`` of an ingested data folder.

An arm is a set of overrides: ``RankingConfig`` fields (``document_weight=1``, ``prior_strength=2``,
``document_stage=false``) and the weights of the fit's parts (``fit.entity=0``, ``fit.period=0``,
``fit.form=0``, ``fit.latest=0``, ``fit.weak=0``, ``fit.floor=0.1``, ``fit.conjunctive=0``: the
weighted mean instead of the soft conjunction). The pipeline is built once; each arm replaces the
retriever's config (no model is rebuilt). Quality is deterministic: no rounds; intervals are 95 %
bootstrap over the questions (differences paired with the first arm).

Run it on the tuning half only (a suite folder or ``--split tune`` of a suite whose queries carry a
``split``); the held-apart half is for the final report::

    python -m bench.doc_tune --data-dir /tmp/filings --suite eval/suites/filings --split tune \\
        --arm base= --arm pages=document_stage=false --arm s1=prior_strength=1 --arm s4=prior_strength=4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from bench._stats import machine_line, result_line
from bench._suite_data import open_search_pipeline
from mmrag.config import merge_settings
from mmrag.evaluate.metrics import query_metrics
from mmrag.evaluate.stats import interval, mean_stat
from mmrag.evaluate.suite import Query, Suite, load_suite
from mmrag.retrieve import document_prior
from mmrag.retrieve_config import RankingConfig
from mmrag.types import SearchRequest

FIT_PARTS = ("entity", "period", "form", "latest")


def parse_arm(text: str) -> tuple[str, dict[str, Any], dict[str, float]]:
    """``name=key=value,key=value`` -> (name, RankingConfig overrides, fit weight overrides)."""
    name, _, rest = text.partition("=")
    config: dict[str, Any] = {}
    fit: dict[str, float] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"arm item {item!r} is not KEY=VALUE")
        if key.startswith("fit."):
            fit[key[4:]] = float(value)
        elif key in RankingConfig.model_fields:
            config[key] = getattr(RankingConfig.model_validate({key: value}), key)
        else:
            raise SystemExit(f"unknown arm key {key!r}: a RankingConfig field or fit.<part>")
    return name, config, fit


def split_questions(suite: Suite, split: str | None) -> list[Query]:
    judged = [q for q in suite.queries if suite.qrels.get(q.id)]
    if split is None:
        return judged
    wanted = {str(row["_id"]) for row in map(json.loads, (suite.path / suite.spec.dataset.queries).read_text()
                                             .splitlines()) if row.get("split") == split}
    return [q for q in judged if q.id in wanted]


def question_rows(pipeline: Any, suite: Suite, questions: list[Query],
                  template: SearchRequest) -> list[dict[str, float]]:
    """Per question: right document first (success@1 of documents), document nDCG@5, page nDCG@5."""
    rows = []
    for q in questions:
        result = pipeline.search(suite.corpus_name, dataclasses.replace(template, query=q.text))
        docs = [suite.doc_key(ev.filename, ev.page) for ev in result.evidence]
        pages = [f"{Path(ev.filename).name}#{ev.page}" for ev in result.evidence]
        doc = query_metrics(docs, suite.qrels[q.id], ["ndcg", "mrr"], [1, 5])
        row = {"first": doc["mrr@1"], "doc_ndcg5": doc["ndcg@5"]}
        if q.id in suite.page_qrels:
            row["page_ndcg5"] = query_metrics(pages, suite.page_qrels[q.id], ["ndcg"], [5])["ndcg@5"]
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--split", default=None, help="only the questions whose 'split' is this (tune)")
    ap.add_argument("--variant", default=None, help="a variant of the suite (e.g. hashed: its corpus and names)")
    ap.add_argument("--arm", action="append", default=[], help="NAME=KEY=V,KEY=V (repeatable; first: the reference)")
    args = ap.parse_args()
    arms = [parse_arm(a) for a in args.arm] or [("default", {}, {})]
    settings, pipeline = open_search_pipeline(args.data_dir)
    prior = document_prior
    weights, weak, floor, conjunctive = dict(prior.WEIGHTS), prior.WEAK, prior.FLOOR, prior.CONJUNCTIVE
    try:
        suite = load_suite(args.suite, variant=args.variant)
        questions = split_questions(suite, args.split)
        spec = suite.spec.pipeline
        template = SearchRequest(query="", top_k=spec.top_k, spaces=spec.spaces)
        print(f"{len(questions)} questions ({args.split or 'all'}); {len(arms)} arms")
        print(machine_line())
        results: dict[str, list[dict[str, float]]] = {}
        for name, config, fit in arms:
            pipeline.retriever.config = merge_settings(settings, {"retrieve": {"ranking": config}}).retrieve
            document_prior.WEIGHTS.update({k: v for k, v in fit.items() if k in FIT_PARTS})
            document_prior.WEAK = fit.get("weak", weak)
            document_prior.FLOOR = fit.get("floor", floor)
            document_prior.CONJUNCTIVE = bool(fit.get("conjunctive", conjunctive))
            pipeline.retriever.documents = document_prior.DocumentsCache(pipeline.catalog)
            results[name] = question_rows(pipeline, suite, questions, template)
            document_prior.WEIGHTS.clear()
            document_prior.WEIGHTS.update(weights)
            document_prior.WEAK, document_prior.FLOOR, document_prior.CONJUNCTIVE = weak, floor, conjunctive
            means = {k: round(float(np.mean(got)), 4) for k in ("first", "doc_ndcg5", "page_ndcg5")
                     if (got := [r[k] for r in results[name] if k in r])}
            print(json.dumps({"arm": name, **config, **{f"fit.{k}": v for k, v in fit.items()}, **means}), flush=True)
        ref = arms[0][0]
        values: dict[str, Any] = {}
        for name, _, _ in arms:
            for key in ("first", "doc_ndcg5", "page_ndcg5"):
                mine = [r.get(key) for r in results[name]]
                base = [r.get(key) for r in results[ref]]
                pairs = [(a, b) for a, b in zip(mine, base, strict=True) if a is not None and b is not None]
                if not pairs:  # a suite without page judgments has no page nDCG
                    continue
                values[f"{name}_{key}"] = interval([a for a, _ in pairs], mean_stat)
                if name != ref:
                    values[f"{name}_minus_{ref}_{key}"] = interval([a - b for a, b in pairs], mean_stat)
        print(machine_line())
        print(result_line(values))
    finally:
        pipeline.retriever.config = settings.retrieve
        pipeline.close()


if __name__ == "__main__":
    main()
