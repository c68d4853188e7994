"""What the end of a one-file job costs in the store as the corpus grows (issue 41): the job's upsert and
the ``store.optimize`` the writer runs after every job, into a small and a large corpus of the default
layout, and what the corpus-wide BM25 re-weight (every page's ``bm25`` vector rewritten, then optimised)
costs at each size — what every 20 % drift of the average used to trigger, now only after a quarter of the
corpus's pages changed (:mod:`mmrag.jobs.bm25_stats`).

Synthetic points of the default corpus's spaces (``text`` multi-vector float16, ``bm25``, ``doc_text``,
``doc_bm25``: :class:`mmrag.store.CollectionSpec` as the corpora build it, on :class:`EdgeStore`); the
sizes are grown and optimised first. Each round adds one 4-page job to each size (ABBA order) and times
upsert + optimise; the RESULT is the median per size and their paired ratio ``large / small``
(``job_ratio``; flat means about 1). Then one forced re-weight per size (``reweight_small_s``,
``reweight_large_s``: rewrite + optimise).

    python -m bench.job_end_cost --sizes 1000,10000 --rounds 8
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from bench._stats import alternate, machine_line, result_line
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.store import CollectionSpec, PointRecord, SpaceSpec, SparseVec
from mmrag.store.edge import EdgeStore

DIM, CHUNKS, TERMS, VOCAB = 384, 6, 150, 30_000
SPEC = CollectionSpec(spaces=(SpaceSpec("text", "multivector", DIM, datatype="float16"),
                              SpaceSpec("bm25", "sparse", idf=True), SpaceSpec("doc_text", "dense", DIM),
                              SpaceSpec("doc_bm25", "sparse", idf=True)))


def _sparse(rng: np.random.Generator) -> SparseVec:
    idx = np.unique(rng.integers(0, VOCAB, TERMS))
    return SparseVec(idx.tolist(), rng.uniform(0.3, 2.0, len(idx)).round(4).tolist())


def _unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)


def pages(rng: np.random.Generator, start: int, n: int, doc: int) -> list[PointRecord]:
    return [PointRecord(id=str(uuid.UUID(int=start + i + 1)),
                        vectors={"text": _unit(rng.standard_normal((CHUNKS, DIM))), "bm25": _sparse(rng),
                                 "doc_text": _unit(rng.standard_normal(DIM)), "doc_bm25": _sparse(rng)},
                        payload={"document_id": f"d{doc + i // 20}", "page": i % 20 + 1, "kind": "page",
                                 "page_id": f"p{start + i}"}) for i in range(n)]


def grow(store: EdgeStore, name: str, size: int, rng: np.random.Generator) -> None:
    store.create_collection(name, SPEC)
    for s in range(0, size, 500):
        store.upsert(name, pages(rng, s, min(500, size - s), s // 20))
    store.optimize(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="small,large: pages of the two corpora")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="short mode: 500,2000 pages, 4 rounds")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.rounds = "500,2000", 4
    small, large = (int(x) for x in args.sizes.split(","))
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = EdgeStore(Path(tmp))
        for name, size in (("small", small), ("large", large)):
            t0 = time.perf_counter()
            grow(store, name, size, rng)
            print(f"{name}: {size} pages grown and optimised in {time.perf_counter() - t0:.1f}s", flush=True)
        added = {"small": small, "large": large}

        def job(name: str):
            def run(_round: int) -> float:
                points = pages(rng, 10_000_000 + added[name], 4, 10_000_000 + added[name])
                added[name] += 4
                t0 = time.perf_counter()
                store.upsert(name, points)
                store.optimize(name)
                return time.perf_counter() - t0
            return run

        times = alternate({"small": job("small"), "large": job("large")}, args.rounds)
        reweight = {}
        for name in ("small", "large"):
            ids = [h.id for h in store.scroll(name, limit=10_000_000)]
            t0 = time.perf_counter()
            for s in range(0, len(ids), 512):
                store.update_vectors(name, {pid: {"bm25": _sparse(rng)} for pid in ids[s:s + 512]})
            store.optimize(name)
            reweight[name] = time.perf_counter() - t0
            print(f"{name}: forced re-weight of {len(ids)} pages + optimise {reweight[name]:.1f}s", flush=True)
        store.close()
    print(machine_line())
    print(result_line({"job_ratio": interval(paired_ratios(times["large"], times["small"])),
                       "job_small_s": interval(times["small"]), "job_large_s": interval(times["large"]),
                       "reweight_small_s": reweight["small"], "reweight_large_s": reweight["large"],
                       "small": small, "large": large}))


if __name__ == "__main__":
    main()
