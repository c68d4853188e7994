"""Recall against cost at a large size: the default search walking the HNSW graphs, and the same search scanning
every point (issue 41's frontier, on its own).

At 250,000 pages the default search walks the text space's HNSW graph (``store.hnsw_ef``) and loses pages of
the exhaustive top 10 (``bench.scale``'s ``recall10``); a server that sets ``MMRAG_STORE__FULL_SCAN_POINTS``
above its corpus's pages scans every point of every dense and multi-vector stage instead: the exhaustive answer
itself (its recall is 1 by construction and is not measured here), at a cost this benchmark measures. Three
arms over the same questions, both folders open at once, the arms' order alternated by question and round
(ABBA): ``small`` (the default search of the small folder: a scan there, under ``full_scan_points``),
``hnsw`` (the large folder's default search) and ``scan`` (the large folder, every stage a full scan: the
store's ``full_scan_points`` raised above its pages for that search). Both pipelines are warmed as the server
warms at start-up and searched once before the first round. The graph's recall@10 against the exhaustive
first stage is measured on ``--recall-queries`` questions (``bench._scale_measure.recall_at``).

The folders are two sizes ``bench.scale`` grew from one base (``--keep --grow-only``)::

    python -m bench.scan_frontier --small SMALL --large LARGE --rounds 6

It ends with ``RESULT hnsw_p50_ratio scan_p50_ratio hnsw_p99_ratio scan_p99_ratio scan_over_hnsw recall10
small_ms hnsw_ms scan_ms pages_small pages_large`` (ratios of medians / 99th percentiles over every search of
the arm, 95 % bootstrap intervals; ``scan_over_hnsw`` paired per search; issue 41's targets are p50 ≤ 2 and
p99 ≤ 3 against the small folder, with recall ≥ 0.99).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

from bench._scale_corpus import corpus_pages
from bench._scale_measure import Searchers, recall_at
from bench._stats import machine_line, result_line, verdict
from bench.upload_scale import opened
from mmrag.evaluate.stats import interval, mean_stat, paired_ratios, percentile_stat, ratio_interval
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import Pipeline
from mmrag.types import SearchRequest

ARMS = ("small", "hnsw", "scan")
SCAN_ALL = 1_000_000_000  # full_scan_points above any corpus: every dense and multi-vector stage scans


def timed_search(pipeline: Pipeline, corpus: str, query: str, scan: bool) -> float:
    """Milliseconds of one default search (the retriever, as the REST handler calls it); ``scan``: with the
    store's ``full_scan_points`` raised above the corpus for this search (restored after)."""
    store = pipeline.retriever.store
    setting = store.index  # type: ignore[attr-defined]
    if scan:
        store.index = replace(setting, full_scan_points=SCAN_ALL)  # type: ignore[attr-defined]
    try:
        t0 = time.perf_counter()
        pipeline.retriever.search(corpus, SearchRequest(query=query))
        return (time.perf_counter() - t0) * 1000
    finally:
        store.index = setting  # type: ignore[attr-defined]


def run(small: Path, large: Path, corpus: str, queries: list[str], rounds: int,
        recall_queries: int) -> dict[str, object]:
    pipelines = {"small": opened(small, corpus), "large": opened(large, corpus)}
    try:
        pages = {name: corpus_pages(p, corpus) for name, p in pipelines.items()}
        print(f"{pages['small']:,} and {pages['large']:,} pages; {len(queries)} queries; {machine_line()}", flush=True)
        ms: dict[str, list[float]] = {a: [] for a in ARMS}
        for r in range(rounds):
            for i, q in enumerate(queries):
                for arm in ARMS if (r + i) % 2 == 0 else ARMS[::-1]:
                    pipeline = pipelines["small" if arm == "small" else "large"]
                    ms[arm].append(timed_search(pipeline, corpus, q, scan=arm == "scan"))
            print(f"round {r + 1}/{rounds}: " + " | ".join(
                f"{a} p50 {statistics.median(ms[a][-len(queries):]):.1f} ms" for a in ARMS), flush=True)
        recall, _ = recall_at(Searchers.of(pipelines["large"]), corpus, queries[:recall_queries])
    finally:
        for p in pipelines.values():
            p.close()
    print(f"recall@10 of the large folder's graph against the exhaustive first stage (by points): "
          f"{statistics.mean(recall):.3f}; the scan's is 1 by construction", flush=True)
    p99 = percentile_stat(99)
    return {"hnsw_p50_ratio": ratio_interval(ms["hnsw"], ms["small"]),
            "scan_p50_ratio": ratio_interval(ms["scan"], ms["small"]),
            "hnsw_p99_ratio": ratio_interval(ms["hnsw"], ms["small"], p99),
            "scan_p99_ratio": ratio_interval(ms["scan"], ms["small"], p99),
            "scan_over_hnsw": interval(paired_ratios(ms["scan"], ms["hnsw"])),
            "recall10": interval(recall, mean_stat),
            "small_ms": interval(ms["small"]), "hnsw_ms": interval(ms["hnsw"]), "scan_ms": interval(ms["scan"]),
            "pages_small": pages["small"], "pages_large": pages["large"]}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=Path, required=True, help="data folder of the small corpus")
    ap.add_argument("--large", type=Path, required=True, help="data folder of the large corpus (same base)")
    ap.add_argument("--corpus", default="sec10q", help="the corpus in both folders")
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--recall-queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=6)
    return ap


def main() -> None:
    args = parser().parse_args()
    queries = [q.text for q in load_suite(args.suite).queries][:args.queries]
    values = run(args.small, args.large, args.corpus, queries, args.rounds, args.recall_queries)
    print(machine_line())
    for name, target in (("hnsw_p50_ratio", 2.0), ("scan_p50_ratio", 2.0), ("hnsw_p99_ratio", 3.0),
                         ("scan_p99_ratio", 3.0)):
        print(verdict(name, values[name], target, at_least=False))  # type: ignore[arg-type]
    print(verdict("recall10 (the graph)", values["recall10"], 0.99, at_least=True))  # type: ignore[arg-type]
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
