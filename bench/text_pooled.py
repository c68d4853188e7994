"""Would a pooled single vector per page, as the HNSW prefetch of the text space, keep the pages the MaxSim
multi-vector graph loses at scale? (issue 41's recall: 0.49 for the text space alone at 250,034 pages.)

The text space stores each page as the multi-vector of its chunks' MiniLM embeddings, indexed by HNSW over
MaxSim between pages. This benchmark copies a grown corpus's text vectors into a scratch store where the
multi-vector is not indexed (``m=0``, as ColPali's full multi-vectors) and a second named vector, the page's
normalised mean chunk vector, is; a query then prefetches ``L`` pages by the mean vector's HNSW and rescores
them by exact MaxSim over the multi-vectors (one Qdrant query, the shape of the ColPali plan). Arms, over the
same questions, rotated over ``--rounds``:

- ``graph``: today's text stage on the grown folder, as the product runs it (HNSW over MaxSim with the store's
  ``hnsw_ef``; a full scan up to ``store.full_scan_points`` points); every other arm walks its index (the scratch
  store never scans in full);
- ``pooled_L`` for each ``L`` of ``--limits``: the scratch store's prefetch + rescore;
- ``chunks_L``: every chunk vector a point of its own (plain HNSW over single vectors), the best ``L`` chunks
  asked and their pages kept in order (a page's best chunk is its MaxSim for a one-vector query: exact when the
  best chunks are found);
- ``graph_mM_efE`` for each ``M:E`` of ``--graphs``: the multi-vectors alone under a MaxSim graph built at once
  with those HNSW parameters (``16:100`` is the product's);
- the reference: the exhaustive MaxSim top 10 over every page (``exact``), asked once.

Per arm: recall@10 against the reference by points and by page contents (a page whose text equals a reference
page's text counts: the benchmark's copies differ by vector noise alone), means over questions with 95 %
bootstrap intervals, and the store's median milliseconds per question (medians over rounds)::

    python -m bench.text_pooled --data-dir DIR --corpus sec10q --scratch DIR2 [--limits 50,100,200,400]

ends with ``RESULT graph_recall10=.. pooled_<L>_recall10=.. ..._content=.. ..._ms=.. build_s=..``. The scratch
store is built once (``--scratch`` kept; ``--rebuild`` to build again) and never touches the grown folder.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench._stats import machine_line, result_line
from mmrag.config import load_settings
from mmrag.evaluate.stats import interval, mean_stat
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline
from mmrag.spaces.base import QueryInput
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    IndexSearch,
    PointRecord,
    QueryNode,
    SpaceSpec,
    VectorStore,
)
from mmrag.store.edge import EdgeStore

SCRATCH = "pooled"
CHUNKS = "chunks"


def graph_name(m: int, ef_construct: int) -> str:
    return f"graph_m{m}_ef{ef_construct}"


def create_graph(target: EdgeStore, m: int, ef_construct: int, dim: int) -> str:
    """A collection of the text multi-vector alone (float16, as the product stores it), indexed by MaxSim HNSW
    with ``m`` / ``ef_construct`` (the product's shards take the engine's 16 / 100)."""
    name = graph_name(m, ef_construct)
    target.create_collection(name, CollectionSpec((SpaceSpec("text", "multivector", dim, datatype="float16",
                                                             graph=(m, ef_construct)),)))
    return name


def build_scratch(source: VectorStore, catalog, corpus: str, target: EdgeStore, dim: int,  # type: ignore[no-untyped-def]
                  graphs: Sequence[tuple[int, int]] = (), others: bool = True) -> float:
    """Copy every page's text multi-vector into ``target`` with its normalised mean, each of its chunk vectors
    as a point of its own (collection ``chunks``) and, for each (m, ef_construct) of ``graphs``, alone under a
    MaxSim graph of those parameters (``others`` False: only those); returns seconds (optimise included)."""
    t0 = time.perf_counter()
    spec = CollectionSpec((SpaceSpec("text", "multivector", dim, index=False, datatype="float16"),
                           SpaceSpec("text_mean", "dense", dim, datatype="float16")))
    extra = [SCRATCH, CHUNKS] if others else []
    for name in (*extra, *(graph_name(m, ef) for m, ef in graphs)):
        if target.has_collection(name):
            target.delete_collection(name)
    named = [create_graph(target, m, ef, dim) for m, ef in graphs]
    if others:
        target.create_collection(SCRATCH, spec)
        target.create_collection(CHUNKS, CollectionSpec((SpaceSpec("chunk", "dense", dim, datatype="float16"),)))
    docs = catalog.documents.listed(corpus, limit=10_000_000)
    for i, info in enumerate(docs):
        hits = source.scroll(corpus, FilterSpec(match={"document_id": info.id}), limit=info.page_count + 16,
                             with_vectors=["text"])
        points, chunks = [], []
        for h in hits:
            mv = np.asarray(h.vectors.get("text") or [], dtype=np.float32)
            if mv.size == 0:
                continue
            payload = {k: h.payload[k] for k in ("page_id", "document_id", "page")}
            vectors: dict[str, Any] = {"text": mv}
            if others:  # the mean-vector and chunk arms (the graphs alone need neither)
                mean = mv.mean(axis=0)
                vectors["text_mean"] = mean / max(float(np.linalg.norm(mean)), 1e-12)
                chunks += [PointRecord(str(uuid.uuid5(uuid.UUID(h.id), str(c))), {"chunk": row}, payload)
                           for c, row in enumerate(mv)]
            points.append(PointRecord(h.id, vectors, payload))
        if others:
            target.upsert(SCRATCH, points)
            target.upsert(CHUNKS, chunks)
        for name in named:
            target.upsert(name, [PointRecord(p.id, {"text": p.vectors["text"]}, p.payload) for p in points])
        if i % 500 == 0:
            print(f"  copied {i + 1}/{len(docs)} documents ({time.perf_counter() - t0:.0f} s)", flush=True)
    for name in (*extra, *named):
        t1 = time.perf_counter()
        target.optimize(name)
        print(f"  {name} indexed in {time.perf_counter() - t1:.0f} s", flush=True)
    return time.perf_counter() - t0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="the grown folder (read only)")
    ap.add_argument("--corpus", default="sec10q")
    ap.add_argument("--scratch", type=Path, required=True, help="folder of the scratch store (built once)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--suite", default="eval/suites/sec-10q")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--limits", default="50,100,200,400")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only-graphs", action="store_true", help="build and measure the --graphs arms alone")
    ap.add_argument("--graphs", default="",
                    help="MaxSim graphs built apart, as m:ef_construct,... (e.g. 16:100,32:400)")
    return ap


def run(args: argparse.Namespace) -> dict[str, object]:
    """Build the scratch store (unless kept), run the arms, print and return the RESULT values."""
    print(machine_line(), flush=True)
    settings = load_settings(data_dir=args.data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    pipeline = build_pipeline(settings, run_jobs=False)
    try:
        store, catalog = pipeline.store, pipeline.catalog
        text = pipeline.spaces["text"]
        # the same hnsw_ef; never a full scan (the product scans a collection of up to store.full_scan_points:
        # what is measured here is the index)
        scratch = EdgeStore(args.scratch, IndexSearch(store.index.hnsw_ef, 0))  # type: ignore[attr-defined]
        build_s = 0.0
        graphs = [(int(m), int(ef)) for m, ef in (g.split(":") for g in args.graphs.split(",") if g)]
        missing = not all(scratch.has_collection(graph_name(m, ef)) for m, ef in graphs) if args.only_graphs \
            else not scratch.has_collection(SCRATCH)
        if args.rebuild or missing:
            build_s = build_scratch(store, catalog, args.corpus, scratch, int(text.embedder.dim), graphs,
                                    others=not args.only_graphs)
            print(f"scratch store built in {build_s:.0f} s", flush=True)
        questions = [q.text for q in load_suite(args.suite).queries][:args.queries]
        vectors = [text.query_vector(QueryInput(text=q)) for q in questions]
        fields = ["page_id"]
        reference = [store.query(args.corpus, QueryNode(10, "text", v, exact=True), payload=fields) for v in vectors]
        limits = [int(x) for x in args.limits.split(",") if x]

        def graph(v: np.ndarray) -> list[Hit]:
            return store.query(args.corpus, QueryNode(10, "text", v), payload=fields)

        def pooled(limit: int):  # type: ignore[no-untyped-def]
            def run(v: np.ndarray) -> list[Hit]:
                node = QueryNode(10, "text", v, prefetch=[QueryNode(limit, "text_mean", v[0])])
                return scratch.query(SCRATCH, node, payload=fields)
            return run

        def chunks(limit: int):  # type: ignore[no-untyped-def]
            def run(v: np.ndarray) -> list[Hit]:
                best: dict[str, Hit] = {}  # a page's best chunk: its MaxSim for a one-vector query
                for h in scratch.query(CHUNKS, QueryNode(limit, "chunk", v[0]), payload=fields):
                    best.setdefault(h.payload["page_id"], h)
                return list(best.values())[:10]
            return run

        def rebuilt(name: str):  # type: ignore[no-untyped-def]
            def run(v: np.ndarray) -> list[Hit]:
                return scratch.query(name, QueryNode(10, "text", v), payload=fields)
            return run

        others = [] if args.only_graphs else limits
        arms = {"graph": graph, **{f"pooled_{n}": pooled(n) for n in others},
                **{f"chunks_{n}": chunks(n) for n in others},
                **{graph_name(m, ef): rebuilt(graph_name(m, ef)) for m, ef in graphs}}
        found: dict[str, list[list[Hit]]] = {}
        ms: dict[str, list[float]] = {a: [] for a in arms}
        names = list(arms)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for arm in order:
                times, hits = [], []
                for v in vectors:
                    t0 = time.perf_counter()
                    hits.append(arms[arm](v))
                    times.append((time.perf_counter() - t0) * 1e3)
                ms[arm].append(statistics.median(times))
                found[arm] = hits
            print(f"round {r + 1}/{args.rounds}: " + " | ".join(f"{a} {ms[a][-1]:.2f} ms" for a in names), flush=True)
        every = [*reference, *(hits for arm_hits in found.values() for hits in arm_hits)]
        page_ids = {h.payload["page_id"] for hits in every for h in hits}
        texts = catalog.pages.plain_texts(args.corpus, sorted(page_ids))
        content = {pid: hashlib.sha256(t.encode()).hexdigest() for pid, t in texts.items()}
        values: dict[str, object] = {}
        for arm in names:
            by_id = [len({h.payload["page_id"] for h in got} & {h.payload["page_id"] for h in want}) / max(len(want), 1)
                     for got, want in zip(found[arm], reference, strict=True)]
            by_content = [len({content[h.payload["page_id"]] for h in got} & {content[h.payload["page_id"]]
                                                                            for h in want})
                          / max(len({content[h.payload["page_id"]] for h in want}), 1)
                          for got, want in zip(found[arm], reference, strict=True)]
            values[f"{arm}_recall10"] = interval(by_id, mean_stat)
            values[f"{arm}_content"] = interval(by_content, mean_stat)
            values[f"{arm}_ms"] = interval(ms[arm])
            print(f"  {arm}: recall@10 {np.mean(by_id):.3f} (least {min(by_id):.1f}), by contents "
                  f"{np.mean(by_content):.3f} (least {min(by_content):.1f}); {statistics.median(ms[arm]):.2f} ms")
        values["build_s"] = round(build_s, 1)
        values["pages"] = store.count(args.corpus)
        values["queries"] = len(questions)
        print(result_line(values))  # type: ignore[arg-type]
        return values
    finally:
        pipeline.close()


def main() -> None:
    run(parser().parse_args())


if __name__ == "__main__":
    main()
