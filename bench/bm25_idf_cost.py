"""What counting BM25's IDF over the live points costs a query (issue 41): the engine's own statistics
(posting lists, which keep deleted points: qdrant/qdrant#6735) against Qdrant's IDF corpus with a
match-all filter (``mmrag.store.qdrant_request.IDF_OVER_LIVE_POINTS``: what a Qdrant server is sent; the
embedded engine reopens a shard after a deletion instead, ``mmrag.store.edge``).

One qdrant-edge shard per size of synthetic sparse points (``--terms`` Zipf-distributed terms a page from
a vocabulary of 50,000, so common terms have long posting lists as in real text), optimised; the same
``--queries`` 8-term queries each round, the two arms alternating ABBA; per arm the median milliseconds a
query, and per size the paired ratio ``live / engine`` (``ratio_<size>``) with its interval.

    python -m bench.bm25_idf_cost --sizes 20000,100000 --rounds 6
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from bench._stats import alternate, machine_line, result_line
from mmrag.evaluate.stats import Estimate, interval, paired_ratios

VOCAB = 50_000
LIVE = qe.SearchParams(idf=qe.IdfParams(corpus=qe.Filter(must=[])))


def _terms(rng: np.random.Generator, n: int) -> list[int]:
    return sorted({int(t) % VOCAB for t in rng.zipf(1.2, n)})


def shard(path: Path, size: int, terms: int, rng: np.random.Generator) -> qe.EdgeShard:
    config = qe.EdgeConfig(vectors={}, sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
                           wal_enabled=False)
    s = qe.EdgeShard.create(str(path), config)
    for start in range(0, size, 5000):
        points = []
        for i in range(start, min(size, start + 5000)):
            idx = _terms(rng, terms)
            points.append(qe.Point(id=i + 1, vector={"bm25": qe.SparseVector(indices=idx, values=[1.0] * len(idx))},
                                   payload={}))
        s.update(qe.UpdateOperation.upsert_points(points))
    s.flush()
    s.optimize()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--terms", type=int, default=150, help="terms drawn per page (before duplicates merge)")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--quick", action="store_true", help="short mode: 2,000 and 10,000 points, 20 queries, 4 rounds")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.queries, args.rounds = "2000,10000", 20, 4
    rng = np.random.default_rng(0)
    queries = [qe.SparseVector(indices=(q := _terms(rng, 8)), values=[1.0] * len(q)) for _ in range(args.queries)]
    values: dict[str, Estimate | float | int | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(x) for x in args.sizes.split(",")):
            t0 = time.perf_counter()
            s = shard(Path(tmp) / str(size), size, args.terms, rng)
            print(f"{size} points built and optimised in {time.perf_counter() - t0:.1f}s", flush=True)

            def arm(params: qe.SearchParams | None, s: qe.EdgeShard = s):
                def run(_round: int) -> float:
                    t = time.perf_counter()
                    for q in queries:
                        s.query(qe.QueryRequest(limit=100, query=qe.Query.Nearest(q, using="bm25"), params=params,
                                                with_payload=False, with_vector=False))
                    return (time.perf_counter() - t) / len(queries) * 1000
                return run

            times = alternate({"engine": arm(None), "live": arm(LIVE)}, args.rounds)
            values |= {f"engine_ms_{size}": interval(times["engine"]), f"live_ms_{size}": interval(times["live"]),
                       f"ratio_{size}": interval(paired_ratios(times["live"], times["engine"]))}
            s.close()
    print(machine_line())
    print(result_line(values))


if __name__ == "__main__":
    main()
