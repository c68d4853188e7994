"""The learned page ranker, leave one company out (issue 27): page nDCG@5, Recall@5 and the share of
questions whose judged page is outside the top 10, by today's order without the ranker (the first stage
with the hand-set page prior: ``MMRAG_RETRIEVE__RANKING__RANKER=off``) and by a ranker trained on every *other*
company (or document family; ``--fold-by kind``: kind of document, leave one kind out) of the training suites,
never on a page of a document the scored fold asks about; candidate recall of the first stage alone and with
the pages of its best documents; the ranker's cost per query. ``--check`` suites (written by others,
never trained on) are scored once by the ranker trained on every training question; ``--extra`` suites are
training data for every fold, never scored (the filings' statements beside a check's leave-one-kind-out folds).
``--by-tag FAMILY`` breaks the scored questions down by their ``FAMILY:`` tags (``kind``, ``evidence``), each
against today's order and, with ``--versus RUN`` (an ``mmrag eval run`` of the same suite: BM25 over pages),
against that run's ranking, paired by question.

Each suite is read from a data folder where ``mmrag eval run`` ingested it (``SUITE@DATA_DIR``)::

    python -m bench.rank_folds --suite eval/suites/filings-lean@/tmp/lean \\
        --suite eval/suites/docling@/tmp/docling --check eval/suites/financebench-dev@/tmp/fb

Leave one kind out on MMLongBench-Doc's shared third (each question searched within its document)::

    python -m bench.rank_folds --suite eval/suites/mmlongbench-dev@/work/data-h3/data --fold-by kind

Leave one kind out with the development suites as training data in every fold, broken down by evidence and
against BM25 over pages::

    python -m bench.rank_folds --suite eval/suites/mmlongbench-dev@DATA --fold-by kind \
        --extra eval/suites/filings-few@DIR1 --extra eval/suites/docling@DIR2 \
        --by-tag kind --by-tag evidence --versus BM25_RUN

Quality is deterministic (no rounds); intervals are 95 % bootstrap over questions, differences paired.
``--latency N`` times N rounds of every training question's search with the ranker and without,
alternated question by question, and prints the ranker's cost (the paired difference of the rounds' p50s: candidates,
features and model) and the p50 and p99 ratios.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bench._stats import machine_line, result_line
from bench._suite_data import open_search_pipeline
from mmrag.evaluate.rank_data import (
    QuestionRows,
    QuestionScore,
    collect_questions,
    collect_suite,
    cross_validate,
    page_metrics,
    question_columns,
    score_questions,
    stack,
    suite_questions,
)
from mmrag.evaluate.reference_questions import corpus_reference_questions, question_folds
from mmrag.evaluate.stats import Estimate, interval, latency_stats, mean_stat, paired_ratios
from mmrag.evaluate.suite import load_suite
from mmrag.retrieve.rank_features import FEATURE_SETS
from mmrag.retrieve.ranker import ROUNDS, train_ranker
from mmrag.retrieve_config import RankingConfig
from mmrag.types import SearchRequest


def suite_arg(text: str) -> tuple[str, Path]:
    suite, sep, data = text.partition("@")
    if not sep:
        raise SystemExit(f"{text!r}: give SUITE@DATA_DIR")
    return suite, Path(data)


def collect(spec: str, cache: Path | None = None, fold_by: str = "company", references: bool = False
            ) -> list[QuestionRows]:
    """The suite's questions with their candidates (read from ``cache`` when it holds them, else written there);
    ``references``: instead, the reference questions written from the suite's documents
    (:mod:`mmrag.evaluate.reference_questions`), each in the fold of the judged questions about its document."""
    key = (spec if fold_by == "company" else f"{spec}|{fold_by}") + ("|references" if references else "")
    if cache is not None and cache.is_file():
        with cache.open("rb") as f:
            cached: dict[str, list[QuestionRows]] = pickle.load(f)  # our own file of this run's questions
        if key in cached:
            return cached[key]
    suite_path, data_dir = suite_arg(spec)
    suite = load_suite(suite_path)
    _, pipeline = open_search_pipeline(data_dir)
    try:
        if references:
            folds = question_folds(suite_questions(suite, fold_by))
            written = corpus_reference_questions(pipeline.retriever.catalog, suite.corpus_name, folds)
            got = collect_questions(pipeline.retriever, suite.corpus_name, written, spaces=suite.spec.pipeline.spaces,
                                    suite=f"{suite.name}+references")
        else:
            got = collect_suite(pipeline.retriever, suite, fold_by=fold_by)
    finally:
        pipeline.close()
    if cache is not None:
        cached = {}
        if cache.is_file():
            with cache.open("rb") as f:
                cached = pickle.load(f)
        cached[key] = got
        with cache.open("wb") as f:
            pickle.dump(cached, f)
    return got


def mean(values: Sequence[float]) -> Estimate:
    return interval(values, mean_stat)


def summary(scores: Sequence[QuestionScore], label: str) -> dict[str, Estimate]:
    base = [s.baseline["ndcg@5"] for s in scores]
    ranked = [s.ranked["ndcg@5"] for s in scores]
    out = {f"{label}_ndcg5": mean(ranked), f"{label}_ndcg5_base": mean(base),
           f"{label}_delta": mean([r - b for r, b in zip(ranked, base, strict=True)]),
           f"{label}_recall5": mean([s.ranked["recall@5"] for s in scores]),
           f"{label}_recall5_base": mean([s.baseline["recall@5"] for s in scores]),
           f"{label}_recall10": mean([s.ranked["recall@10"] for s in scores]),
           f"{label}_recall10_base": mean([s.baseline["recall@10"] for s in scores]),
           f"{label}_outside10": mean([s.ranked["outside10"] for s in scores]),
           f"{label}_outside10_base": mean([s.baseline["outside10"] for s in scores]),
           f"{label}_doc_first": mean([s.ranked["doc_first"] for s in scores]),
           f"{label}_doc_first_base": mean([s.baseline["doc_first"] for s in scores]),
           f"{label}_candidates": mean([s.candidate_recall for s in scores])}
    return out


def fold_table(scores: Sequence[QuestionScore]) -> None:
    by_fold: dict[str, list[QuestionScore]] = defaultdict(list)
    for s in scores:
        by_fold[f"{s.suite}/{s.fold}"].append(s)
    print(f"{'fold':40} {'n':>3} {'base':>6} {'ranker':>6} {'delta (95% CI)':>22} {'cand':>5}")
    for fold, rows in sorted(by_fold.items()):
        base = [r.baseline["ndcg@5"] for r in rows]
        ranked = [r.ranked["ndcg@5"] for r in rows]
        d = mean([a - b for a, b in zip(ranked, base, strict=True)])
        print(f"{fold:40} {len(rows):>3} {np.mean(base):6.3f} {np.mean(ranked):6.3f} "
              f"{d.value:+7.3f} ({d.lo:+.3f}..{d.hi:+.3f}) {np.mean([r.candidate_recall for r in rows]):5.2f}")


def against(scores: Sequence[QuestionScore], other: list[dict[str, Any]]) -> dict[str, Estimate]:
    """This run's scores minus another run's (its ``--scores-out``), paired by question: ranked and base
    nDCG@5 and right document first, per suite (``<suite>_vs_ndcg5``, ``_vs_ndcg5_base``, ``_vs_doc_first``)."""
    theirs = {(o["suite"], o["query_id"]): o for o in other}
    out: dict[str, Estimate] = {}
    for suite in sorted({s.suite for s in scores}):
        pairs = [(s, theirs[s.suite, s.query_id]) for s in scores
                 if s.suite == suite and (s.suite, s.query_id) in theirs]
        label = suite.replace("-", "_")
        for name, arm, metric in (("ndcg5", "ranked", "ndcg@5"), ("ndcg5_base", "baseline", "ndcg@5"),
                                  ("doc_first", "ranked", "doc_first")):
            out[f"{label}_vs_{name}"] = mean([getattr(s, arm)[metric] - o[arm][metric] for s, o in pairs])
    return out


def run_rankings(run: Path) -> dict[str, list[str]]:
    """Each query's page ranking (``file#page``, best first) in an ``mmrag eval run`` output folder."""
    out = {}
    for line in (run / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[row["id"]] = [hit["doc"] for hit in row["ranking"]]
    return out


def by_tag(scores: Sequence[QuestionScore], questions: Sequence[QuestionRows], tags: dict[str, list[str]],
           family: str, versus: dict[str, list[str]] | None) -> dict[str, Estimate]:
    """Page nDCG@5 of the scored questions per ``family:`` tag (a question counts under each of its tags): today's
    order, the ranker, their paired difference and, with ``versus``, the ranker minus that run's ranking."""
    judged = {(q.suite, q.query_id): q.judged for q in questions}
    groups: dict[str, list[QuestionScore]] = defaultdict(list)
    for s in scores:
        for tag in tags.get(s.query_id, []):
            if tag.startswith(f"{family}:"):
                groups[tag.removeprefix(f"{family}:")].append(s)
    out: dict[str, Estimate] = {}
    print(f"{family:24} {'n':>3} {'off':>6} {'ranker':>6} {'ranker - off (95% CI)':>24}"
          + (f" {'versus':>6} {'ranker - versus':>24}" if versus else ""))
    for value, rows in sorted(groups.items()):
        off = [r.baseline["ndcg@5"] for r in rows]
        ranked = [r.ranked["ndcg@5"] for r in rows]
        d = mean([a - b for a, b in zip(ranked, off, strict=True)])
        label = f"{family}_{value}".replace("-", "_").replace(" ", "_")
        out[f"{label}_ndcg5"], out[f"{label}_delta"] = mean(ranked), d
        line = (f"{value:24} {len(rows):>3} {np.mean(off):6.3f} {np.mean(ranked):6.3f} "
                f"{d.value:+7.3f} ({d.lo:+.3f}..{d.hi:+.3f})")
        if versus is not None:
            other = [page_metrics(versus.get(r.query_id, []), judged[r.suite, r.query_id])["ndcg@5"] for r in rows]
            v = mean([a - b for a, b in zip(ranked, other, strict=True)])
            out[f"{label}_vs_run"] = v
            line += f" {np.mean(other):6.3f} {v.value:+7.3f} ({v.lo:+.3f}..{v.hi:+.3f})"
        print(line)
    return out


def candidate_recall(questions: Sequence[QuestionRows]) -> None:
    """Share of questions with a judged page among the first stage's candidates, and with the added pages."""
    first = [float(any(q.judged.get(k, 0) > 0 for k, f in zip(q.keys, q.first, strict=True) if f))
             for q in questions]
    full = [float(any(q.judged.get(k, 0) > 0 for k in q.keys)) for q in questions]
    sizes = [len(q.keys) for q in questions]
    print(f"candidate recall: first stage {np.mean(first):.3f}, with the best documents' pages {np.mean(full):.3f} "
          f"(candidates per question: median {np.median(sizes):.0f}, max {max(sizes)})")


def latency(specs: Sequence[str], rounds: int, model_path: Path) -> dict[str, Estimate]:
    """Search latency with the ranker (``model_path``) and without, alternated question by question (the
    order flipping each question and round) in one process per suite, warmed up as the server's start-up
    warms it. Per round and arm: the p50 and p99 of that round's searches
    (:func:`mmrag.evaluate.stats.latency_stats`); the ranker's cost is the paired difference of the p50s,
    the ratios are paired per round; each suite on its own (``SUITE_p50_ratio``...: a 5,000-page corpus
    and a small one are different workloads)."""
    out: dict[str, Estimate] = {}
    for spec in specs:
        p50: dict[str, list[float]] = {"on": [], "off": []}
        p99: dict[str, list[float]] = {"on": [], "off": []}
        suite_path, data_dir = suite_arg(spec)
        suite = load_suite(suite_path)
        _, pipeline = open_search_pipeline(data_dir)
        retriever = pipeline.retriever
        arms = {"on": retriever.config.model_copy(update={"ranking": RankingConfig(ranker=str(model_path))}),
                "off": retriever.config.model_copy(update={"ranking": RankingConfig(ranker="off")})}
        try:
            pipeline.warm_up()
            for name in arms:  # untimed: sessions, caches (the ranker's page traits)
                retriever.config = arms[name]
                for q in suite.queries:
                    pipeline.search(suite.corpus_name, SearchRequest(query=q.text, top_k=10))
            for r in range(rounds):
                times: dict[str, list[float]] = {"on": [], "off": []}
                for i, q in enumerate(suite.queries):  # arms alternate query by query: the same box state
                    for name in ("on", "off") if (i + r) % 2 == 0 else ("off", "on"):
                        retriever.config = arms[name]
                        t = time.perf_counter()
                        pipeline.search(suite.corpus_name, SearchRequest(query=q.text, top_k=10))
                        times[name].append(time.perf_counter() - t)
                for name, got in times.items():
                    stats = latency_stats(got)
                    p50[name].append(stats.p50 * 1000)
                    p99[name].append(stats.p99 * 1000)
                print(f"{suite.corpus_name} round {r + 1}/{rounds}: p50 ranker {p50['on'][-1]:.1f} ms, without "
                      f"{p50['off'][-1]:.1f} ms; p99 {p99['on'][-1]:.1f} / {p99['off'][-1]:.1f} ms", flush=True)
        finally:
            pipeline.close()
        key = suite.name.replace("-", "_")
        out |= {f"{key}_p50_ratio": interval(paired_ratios(p50["on"], p50["off"])),
                f"{key}_p99_ratio": interval(paired_ratios(p99["on"], p99["off"])),
                f"{key}_ranker_ms": interval([a - b for a, b in zip(p50["on"], p50["off"], strict=True)]),
                f"{key}_p50_on_ms": interval(p50["on"]), f"{key}_p50_off_ms": interval(p50["off"])}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="append", required=True, help="training suite SUITE@DATA_DIR (repeatable)")
    ap.add_argument("--check", action="append", default=[], help="suite scored once, never trained on")
    ap.add_argument("--extra", action="append", default=[],
                    help="suite SUITE@DATA_DIR every fold's ranker also trains on, never scored (repeatable)")
    ap.add_argument("--by-tag", action="append", default=[],
                    help="break the scored questions down by this tag family (kind, evidence; repeatable)")
    ap.add_argument("--versus", type=Path, default=None,
                    help="an `mmrag eval run` output of the scored suite: the ranker minus its ranking, per tag")
    ap.add_argument("--latency", type=int, default=0, help="rounds of the search latency comparison (0: none)")
    ap.add_argument("--model-out", type=Path, default=None, help="also save the model trained on every question")
    ap.add_argument("--cache", type=Path, default=None, help="keep the collected candidates here (a sweep reads them)")
    ap.add_argument("--scores-out", type=Path, default=None, help="write each question's scores here (JSON)")
    ap.add_argument("--against", type=Path, default=None,
                    help="another run's --scores-out: this run minus that one, paired by question")
    ap.add_argument("--fold-by", default="company",
                    help="tag family the folds follow (company, kind); a question without one: its document")
    ap.add_argument("--features", default="base", choices=sorted(FEATURE_SETS),
                    help="feature set of the rankers (base: the shipped model's; references: with what the question "
                         "names by number, mmrag.retrieve.references; context: with the page's coverage of the "
                         "question and its neighbours' scores)")
    ap.add_argument("--reference-questions", action="store_true",
                    help="also train on questions naming a page, figure or table by number, written from the training "
                         "suites' own documents (mmrag.evaluate.reference_questions; scored: never)")
    ap.add_argument("--params", default="{}", help="LightGBM parameters over the shipped ones (JSON), e.g. "
                                                   '\'{"num_leaves": 7, "rounds": 100}\'')
    args = ap.parse_args()
    print(machine_line())
    params = json.loads(args.params)
    rounds = int(params.pop("rounds", ROUNDS))
    questions = [q for spec in args.suite for q in collect(spec, args.cache, args.fold_by)]
    print(f"{len(questions)} judged questions, {len({q.fold for q in questions})} folds")
    candidate_recall(questions)
    features = FEATURE_SETS[args.features]
    print(f"features: {args.features} ({len(features)})")
    written = [q for spec in args.suite for q in collect(spec, args.cache, args.fold_by, references=True)] \
        if args.reference_questions else []
    if written:
        print(f"{len(written)} reference questions written from the documents (training only)")
    extra = [q for spec in args.extra for q in collect(spec, args.cache, args.fold_by)]
    if extra:
        print(f"{len(extra)} questions of {len(args.extra)} suite(s) as training data in every fold")
        if shared := sorted({q.fold for q in extra} & {q.fold for q in questions}):
            print(f"note: extra questions in scored folds {shared} are left out of those folds' training")
    scores = cross_validate(questions, [*questions, *written, *extra], features=features, rounds=rounds,
                            params=params)
    fold_table(scores)
    tags = {q.id: q.tags for spec in args.suite for q in load_suite(suite_arg(spec)[0]).queries} \
        if args.by_tag else {}
    versus = run_rankings(args.versus) if args.versus else None
    values: dict[str, Estimate | float | int | str] = {}
    for family in args.by_tag:
        values.update(by_tag(scores, questions, tags, family, versus))
    if versus is not None:  # every scored question against the other run, whatever its tags
        values.update(by_tag(scores, questions, {s.query_id: ["all:questions"] for s in scores}, "all", versus))
    for suite in sorted({s.suite for s in scores}):
        values.update(summary([s for s in scores if s.suite == suite], suite.replace("-", "_")))
    if args.scores_out:
        args.scores_out.write_text(json.dumps([asdict(s) for s in scores]))
    if args.against:
        values.update(against(scores, json.loads(args.against.read_text())))
    full = train_ranker(*stack([*questions, *written, *extra], features), rounds=rounds, params=params,
                        features=features)
    if args.model_out:
        full.save(args.model_out)
    for spec in args.check:
        checked = collect(spec, args.cache, args.fold_by)
        candidate_recall(checked)
        got = score_questions(checked, [full.score(question_columns(q, features)) for q in checked])
        fold_table(got)
        values.update(summary(got, "check_" + got[0].suite.replace("-", "_")))
    if args.latency and args.model_out:
        values.update(latency(args.suite, args.latency, args.model_out))
    for name, v in values.items():
        if isinstance(v, Estimate):
            print(f"{name:32} {v.value:.3f} ({v.lo:.3f}..{v.hi:.3f})")
    print(result_line(values))


if __name__ == "__main__":
    main()
