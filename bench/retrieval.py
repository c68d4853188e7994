"""Retrieval benchmark: two-stage vs exhaustive MaxSim, size/quality of representations,
REST overhead. ``python -m bench.retrieval [--quick]``; results in docs/benchmarks.md.

Corpus: :mod:`bench.retrieval_corpus` (real MiniLM token embeddings over real text), 10,000 pages
(``--quick``: 5,000, the mid-size mode). Ground truth everywhere: exhaustive float32 MaxSim of the
query against every page. The 100 queries are split: the first ``--tune`` (30) choose the plan
(prefetch candidates) and the small representation; every reported number comes from the others.

Timing: ``--rounds`` rounds, each timing numpy's batched exhaustive MaxSim, qdrant-edge's full
scan and the chosen two-stage plan over every held-out query, the order rotating from round to
round; per round ``speedup = min(numpy, edge) median ms / two-stage median ms``. REST overhead:
the same rounds design (see :mod:`bench.retrieval_rest`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._stats import alternate, machine_line, result_line, verdict
from bench.retrieval_corpus import corpus, queries
from bench.retrieval_maths import Packed, maxsim_all, pack, recall_at_k, top_k
from bench.retrieval_rest import rest_overhead
from bench.retrieval_size import size_quality
from bench.retrieval_store import CORPUS, load_pages, open_pipeline, page_index
from mmrag.evaluate.stats import interval, mean_stat, paired_ratios
from mmrag.pipeline import Pipeline
from mmrag.retrieve.plan import PlanOptions, build_plan
from mmrag.spaces.base import QueryInput
from mmrag.store.base import QueryNode

K = 10


def ms(seconds: list[float]) -> float:
    return 1000 * statistics.median(seconds)


def edge_exhaustive_ms(pipeline: Pipeline, qs: list[np.ndarray]) -> float:
    times = []
    for q in qs:
        t0 = time.perf_counter()
        pipeline.store.query(CORPUS, QueryNode(limit=K, using="colpali", vector=q))
        times.append(time.perf_counter() - t0)
    return ms(times)


def numpy_exhaustive_ms(packed: Packed, qs: list[np.ndarray]) -> float:
    times = []
    for q in qs:
        t0 = time.perf_counter()
        top_k(maxsim_all(q, packed), K)
        times.append(time.perf_counter() - t0)
    return ms(times)


def two_stage(pipeline: Pipeline, qs: list[np.ndarray], ids: list[int], truth: list[np.ndarray],
              candidates: int) -> tuple[float, list[float]]:
    """(median ms, per-query Recall@10) of the product's plan: mean-vector prefetch -> full MaxSim
    rerank, over the queries ``ids``."""
    spaces = pipeline.retriever.corpus_spaces(pipeline.catalog.corpora.config(CORPUS))
    times, recalls = [], []
    for i in ids:
        query = QueryInput(text=f"q{i}")
        t0 = time.perf_counter()
        node = build_plan(spaces, ["colpali"], query, PlanOptions(K, candidates, 60, {}), None)
        hits = pipeline.store.query(CORPUS, node)
        times.append(time.perf_counter() - t0)
        got = np.array([page_index(h.payload["page_id"]) for h in hits])
        recalls.append(recall_at_k(truth[i], got, K))
        assert qs[i].shape == pipeline.embedders["colpali"].embed(f"q{i}").shape
    return ms(times), recalls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="5,000 pages (the mid-size mode, minutes)")
    parser.add_argument("--pages", type=int, default=None)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--tune", type=int, default=30, help="queries that choose the plan (held apart)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="accepted for bench/gpu.sh; this benchmark is CPU-only")
    args = parser.parse_args()
    n_pages = args.pages or (5000 if args.quick else 10_000)
    t_start = time.perf_counter()
    print(machine_line(), flush=True)
    pages, qs = corpus(n_pages), queries(100)[:args.queries]
    tune, test = list(range(args.tune)), list(range(args.tune, len(qs)))
    tokens = float(np.mean([len(p) for p in pages]))
    print(f"corpus: {len(pages)} pages, {tokens:.1f} tokens/page x 128 dims; {len(qs)} queries "
          f"({len(tune)} tuning, {len(test)} held out), {np.mean([len(q) for q in qs]):.1f} tokens each", flush=True)
    packed = pack(pages, 512)
    truth = [top_k(maxsim_all(q, packed), K) for q in qs]
    test_qs = [qs[i] for i in test]

    with tempfile.TemporaryDirectory(prefix="mmrag-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        pipeline = open_pipeline(data_dir, qs)
        t0 = time.perf_counter()
        load_pages(pipeline, pages)
        print(f"loaded into the embedded engine (qdrant-edge) in {time.perf_counter() - t0:.0f}s", flush=True)
        print("\ntuning queries: two-stage (mean prefetch -> full MaxSim rerank, one edge query)")
        print(f"{'candidates':>10} {'ms/query':>9} {'Recall@10':>10}")
        tuned = []
        for cand in (50, 100, 200, 400):
            lat, rec = two_stage(pipeline, qs, tune, truth, cand)
            tuned.append((cand, lat, float(np.mean(rec))))
            print(f"{cand:>10} {lat:>9.2f} {tuned[-1][2]:>10.3f}", flush=True)
        ok = [r for r in tuned if r[2] >= 0.95]
        chosen = min(ok, key=lambda r: r[1])[0] if ok else max(tuned, key=lambda r: r[2])[0]
        print(f"chosen on the tuning queries: {chosen} candidates", flush=True)
        arms = {"numpy": lambda r: numpy_exhaustive_ms(packed, test_qs),
                "edge": lambda r: edge_exhaustive_ms(pipeline, test_qs),
                "two-stage": lambda r: two_stage(pipeline, qs, test, truth, chosen)[0]}
        times = alternate(arms, args.rounds)
        base = [min(a, b) for a, b in zip(times["numpy"], times["edge"], strict=True)]
        speedup = interval(paired_ratios(base, times["two-stage"]))
        recall = interval(two_stage(pipeline, qs, test, truth, chosen)[1], mean_stat)
        rest = rest_overhead(pipeline, data_dir, test_qs, chosen, requests=160 if args.quick else 400,
                             rounds=args.rounds)
    print(f"\nheld-out queries ({len(test)}): exhaustive numpy {statistics.median(times['numpy']):.2f} ms, "
          f"qdrant-edge {statistics.median(times['edge']):.2f} ms, two-stage ({chosen}) "
          f"{statistics.median(times['two-stage']):.2f} ms -> speed-up {speedup.value:.1f}x "
          f"[{speedup.lo:.1f}, {speedup.hi:.1f}], Recall@10 {recall.value:.3f} [{recall.lo:.3f}, {recall.hi:.3f}]")
    print("\nsize / quality (numpy, Recall@10 vs exhaustive float32, all queries):")
    size_rows = size_quality(pages, qs, truth, quick=args.quick)
    small = max((r for r in size_rows if r.ratio <= 1 / 16 + 1e-9),
                key=lambda r: float(np.mean([r.recalls[i] for i in tune])))
    small_recall = interval([small.recalls[i] for i in test], mean_stat)
    p99 = interval(paired_ratios(rest.rest_p99, rest.inproc_p99))
    p50 = interval(paired_ratios(rest.rest_p50, rest.inproc_p50))
    print(f"\nREST vs in-process, 8 concurrent clients, {rest.requests} in-process requests per round, "
          f"candidates={chosen}: p50 ratio {p50.value:.2f} [{p50.lo:.2f}, {p50.hi:.2f}], p99 ratio {p99.value:.2f} "
          f"[{p99.lo:.2f}, {p99.hi:.2f}] (median in-process p99 {statistics.median(rest.inproc_p99):.1f} ms, "
          f"REST {statistics.median(rest.rest_p99):.1f} ms)")
    print(f"\ntotal {time.perf_counter() - t_start:.0f}s; small config (chosen on tuning queries): {small.name}")
    print(machine_line())
    print(verdict("speedup", speedup, 13.0, at_least=True))
    print(verdict("recall10", recall, 0.95, at_least=True))
    print(verdict("small_recall10", small_recall, 0.97, at_least=True))
    print(verdict("rest_p99_ratio", p99, 1.2, at_least=False))
    print(result_line({"speedup": speedup, "recall10": recall, "small_bytes_ratio": small.ratio,
                       "small_recall10": small_recall, "rest_p99_ratio": p99, "rest_p50_ratio": p50}))


if __name__ == "__main__":
    main()
