"""Retrieval benchmark: two-stage vs exhaustive MaxSim, size/quality of representations,
REST overhead. ``python -m bench.retrieval [--quick]``; results in docs/parts/retrieval.md.

Corpus: :mod:`bench.retrieval_corpus` (real MiniLM token embeddings over real text).
Ground truth everywhere: exhaustive float32 MaxSim of the query against every page.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.retrieval_corpus import corpus, queries
from bench.retrieval_maths import maxsim_all, pack, recall_at_k, top_k
from bench.retrieval_rest import rest_overhead
from bench.retrieval_size import size_quality
from bench.retrieval_store import CORPUS, load_pages, open_pipeline, page_index
from mmrag.pipeline import Pipeline
from mmrag.retrieve.plan import PlanOptions, build_plan
from mmrag.spaces.base import QueryInput
from mmrag.store.base import QueryNode

K = 10


def ms(seconds: list[float]) -> float:
    return 1000 * statistics.median(seconds)


def exhaustive(pages: list[np.ndarray], qs: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """Ground truth top-10 and the median latency of numpy's batched exhaustive MaxSim."""
    packed = pack(pages, 512)
    truth, times = [], []
    for q in qs:
        t0 = time.perf_counter()
        truth.append(top_k(maxsim_all(q, packed), K))
        times.append(time.perf_counter() - t0)
    return truth, ms(times)


def edge_exhaustive_ms(pipeline: Pipeline, qs: list[np.ndarray], n: int = 8) -> float:
    times = []
    for q in qs[:n]:
        t0 = time.perf_counter()
        pipeline.store.query(CORPUS, QueryNode(limit=K, using="colpali", vector=q))
        times.append(time.perf_counter() - t0)
    return ms(times)


def two_stage(pipeline: Pipeline, qs: list[np.ndarray], truth: list[np.ndarray],
              candidates: int) -> tuple[float, float]:
    """(median ms, Recall@10) of the product's plan: mean-vector prefetch -> full MaxSim rerank."""
    spaces = pipeline.retriever.corpus_spaces(pipeline.catalog.corpus_config(CORPUS))
    times, recalls = [], []
    for i, q in enumerate(qs):
        query = QueryInput(text=f"q{i}")
        t0 = time.perf_counter()
        node = build_plan(spaces, ["colpali"], query, PlanOptions(K, candidates, 60, {}), None)
        hits = pipeline.store.query(CORPUS, node)
        times.append(time.perf_counter() - t0)
        got = np.array([page_index(h.payload["page_id"]) for h in hits])
        recalls.append(recall_at_k(truth[i], got, K))
        assert q.shape == pipeline.embedders["colpali"].embed(f"q{i}").shape
    return ms(times), float(np.mean(recalls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,000 pages, 40 queries (minutes)")
    parser.add_argument("--pages", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    args = parser.parse_args()
    n_pages = args.pages or (1000 if args.quick else 10_000)
    n_queries = args.queries or (40 if args.quick else 100)
    t_start = time.perf_counter()
    pages, qs = corpus(n_pages), queries(100)[:n_queries]
    tokens = float(np.mean([len(p) for p in pages]))
    print(f"corpus: {len(pages)} pages, {tokens:.1f} tokens/page x 128 dims; {len(qs)} queries, "
          f"{np.mean([len(q) for q in qs]):.1f} tokens each", flush=True)
    truth, numpy_ms = exhaustive(pages, qs)
    print(f"exhaustive MaxSim, numpy batched matmul: {numpy_ms:.2f} ms/query (median)", flush=True)

    with tempfile.TemporaryDirectory(prefix="mmrag-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        pipeline = open_pipeline(data_dir, qs)
        t0 = time.perf_counter()
        load_pages(pipeline, pages)
        print(f"loaded into the embedded engine (qdrant-edge) in {time.perf_counter() - t0:.0f}s", flush=True)
        edge_ms = edge_exhaustive_ms(pipeline, qs)
        base_ms = min(numpy_ms, edge_ms)
        base = "numpy" if numpy_ms <= edge_ms else "qdrant-edge"
        print(f"exhaustive MaxSim, qdrant-edge full scan: {edge_ms:.2f} ms/query -> baseline = {base}")
        print("\ntwo-stage (mean prefetch -> full MaxSim rerank, one edge query):")
        print(f"{'candidates':>10} {'ms/query':>9} {'speed-up':>9} {'Recall@10':>10}")
        rows = []
        for cand in (50, 100, 200, 400):
            lat, rec = two_stage(pipeline, qs, truth, cand)
            rows.append((cand, lat, base_ms / lat, rec))
            print(f"{cand:>10} {lat:>9.2f} {base_ms / lat:>8.1f}x {rec:>10.3f}", flush=True)
        ok = [r for r in rows if r[3] >= 0.95]
        chosen = max(ok, key=lambda r: r[2]) if ok else max(rows, key=lambda r: r[3])
        rest_cand = chosen[0]
        rest = rest_overhead(pipeline, data_dir, qs, rest_cand, requests=160 if args.quick else 400)
    print("\nsize / quality (numpy, same queries, Recall@10 vs exhaustive float32):")
    size_rows = size_quality(pages, qs, truth, quick=args.quick)
    small = max((r for r in size_rows if r.ratio <= 1 / 16 + 1e-9), key=lambda r: r.recall)
    print(f"\nREST vs in-process, 8 concurrent clients, {rest.requests} in-process / {rest.rest_requests} REST "
          f"requests, candidates={rest_cand}:")
    print(f"  in-process p50 {rest.inproc_p50:.2f} ms  p99 {rest.inproc_p99:.2f} ms")
    print(f"  REST       p50 {rest.rest_p50:.2f} ms  p99 {rest.rest_p99:.2f} ms  "
          f"(p50 ratio {rest.rest_p50 / rest.inproc_p50:.2f}, p99 ratio {rest.rest_p99 / rest.inproc_p99:.2f})")
    print(f"\ntotal {time.perf_counter() - t_start:.0f}s; small config: {small.name}")
    print(f"RESULT speedup={chosen[2]:.1f} recall10={chosen[3]:.3f} small_bytes_ratio={small.ratio:.4f} "
          f"small_recall10={small.recall:.3f} rest_p99_ratio={rest.rest_p99 / rest.inproc_p99:.2f}")


if __name__ == "__main__":
    main()
