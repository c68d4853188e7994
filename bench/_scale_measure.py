"""What bench/scale.py measures at each corpus size, over the product's own search path in-process.

Search goes through the pipeline's retriever (``Retriever.search``: plan, one Qdrant query, the learned
ranker's candidates, hydrate), as the REST handler calls it, with no HTTP in between. The arm without the
ranker is a second :class:`~mmrag.retrieve.Retriever` over the same catalog, store and spaces whose config
says ``ranking.ranker = "off"`` (what ``MMRAG_RETRIEVE__RANKING__RANKER=off`` gives a server).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.jobs import bm25_stats
from mmrag.pipeline import Pipeline
from mmrag.retrieve import Retriever
from mmrag.retrieve.evidence import order_hits, query_past_ties
from mmrag.store.base import Hit, IndexSearch, QueryNode
from mmrag.types import SearchRequest

ARMS = ("hybrid_ranker", "hybrid", "text", "filter")
"""hybrid_ranker: the product's default search (every space of the corpus, the shipped ranker); hybrid: the
same without the ranker; text: the dense text space alone (with the ranker); filter: the default search
restricted to one document (``document_ids``)."""


def folder_bytes(path: Path) -> int:
    """Bytes on disk under ``path`` (allocated blocks)."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def rss_gb() -> float:
    """This process's resident memory now, in GB."""
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1e6


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


@dataclass
class Searchers:
    """The product's search with and without the learned ranker, over one pipeline."""

    pipeline: Pipeline
    no_ranker: Retriever

    @classmethod
    def of(cls, pipeline: Pipeline) -> Searchers:
        r = pipeline.retriever
        config = r.config.model_copy(deep=True)
        config.ranking.ranker = "off"
        return cls(pipeline, Retriever(r.catalog, r.store, r.spaces, config, r.ingest))

    def request(self, arm: str, query: str, document_id: str) -> tuple[Callable[[str, SearchRequest], object],
                                                                       SearchRequest]:
        if arm == "hybrid":
            return self.no_ranker.search, SearchRequest(query=query)
        if arm == "text":
            return self.pipeline.retriever.search, SearchRequest(query=query, spaces=["text"])
        if arm == "filter":
            return self.pipeline.retriever.search, SearchRequest(query=query, document_ids=[document_id])
        return self.pipeline.retriever.search, SearchRequest(query=query)


def latencies(searchers: Searchers, corpus: str, queries: list[str], documents: list[str], rounds: int,
              log: Callable[[str], None] = print) -> dict[str, list[float]]:
    """Milliseconds of every search per arm: in each round every query runs once per arm, the arms' order
    alternating by query and round (ABBA)."""
    out: dict[str, list[float]] = {a: [] for a in ARMS}
    for r in range(rounds):
        for i, q in enumerate(queries):
            for arm in ARMS if (r + i) % 2 == 0 else ARMS[::-1]:
                search, request = searchers.request(arm, q, documents[i % len(documents)])
                t0 = time.perf_counter()
                search(corpus, request)
                out[arm].append((time.perf_counter() - t0) * 1000)
        log(f"  round {r + 1}/{rounds}: " + " | ".join(
            f"{a} p50 {statistics.median(out[a][-len(queries):]):.1f} ms" for a in ARMS)
            + f" | load {os.getloadavg()[0]:.1f}")
    return out


def exact(node: QueryNode) -> QueryNode:
    """The plan with every stage scoring every point (no HNSW, no quantised copy: a full scan)."""
    full = deepcopy(node)

    def mark(n: QueryNode) -> None:
        n.exact = True
        for child in n.prefetch:
            mark(child)

    mark(full)
    return full


def first_stage(retriever: Retriever, corpus: str, query: str, k: int, spaces: list[str] | None = None,
                payload: list[str] | None = None, exhaustive: bool = False) -> list[Hit]:
    """The top ``k`` of the first stage of the product's plan for ``query`` (planned anew: the document stage's
    choice included), cut as the product cuts it (:func:`mmrag.retrieve.evidence.query_past_ties`: ties at the
    cut by page id); ``exhaustive``: every stage a full scan (:func:`exact`)."""
    *_, node = retriever.prepare(corpus, SearchRequest(query=query, top_k=k, spaces=spaces))
    return order_hits(query_past_ties(retriever.store, corpus, exact(node) if exhaustive else node, k,
                                      payload=payload), k)


def recall_at(searchers: Searchers, corpus: str, queries: list[str], k: int = 10, spaces: list[str] | None = None,
              original: Mapping[str, str] | None = None) -> tuple[list[float], list[float]]:
    """Per query: the share of the exhaustive search's top ``k`` pages that the approximate search finds, for
    the first stage of the product's plan (default: every space, document stage, fusion: one query); as
    points, and as page contents (``original``: document id -> the real document it copies; a copy of the
    page found in its place counts: the copies' vectors differ by noise alone)."""
    r = searchers.pipeline.retriever
    points, contents = [], []
    for q in queries:
        fields = ["document_id", "page"]
        approx, full = first_stage(r, corpus, q, k, spaces, fields), first_stage(r, corpus, q, k, spaces, fields, True)

        def content(h: Hit) -> tuple[str, int]:
            doc = h.payload["document_id"]
            return (original or {}).get(doc, doc), int(h.payload["page"])

        points.append(_share({h.id for h in approx}, {h.id for h in full}))
        contents.append(_share({content(h) for h in approx}, {content(h) for h in full}))
    return points, contents


def recall_by_ef(searchers: Searchers, corpus: str, queries: list[str], efs: list[int | None], k: int = 10,
                 spaces: list[str] | None = None) -> dict[str, tuple[float, float, float]]:
    """Per ``hnsw_ef`` (None: the engine's own): the mean and the least share of the exhaustive top ``k`` the
    plan's first stage finds (by points), and its median milliseconds in the store (the one Qdrant query); the
    store's own setting restored after."""
    r = searchers.pipeline.retriever
    nodes = []
    for q in queries:
        *_, node = r.prepare(corpus, SearchRequest(query=q, top_k=k, spaces=spaces))
        node.limit = k
        nodes.append(node)
    wanted = [{h.id for h in r.store.query(corpus, exact(n), payload=[])} for n in nodes]
    setting, out = r.store.index, {}
    try:
        for ef in efs:
            r.store.index = IndexSearch(hnsw_ef=ef)
            shares, ms = [], []
            for node, full in zip(nodes, wanted, strict=True):
                t0 = time.perf_counter()
                found = {h.id for h in r.store.query(corpus, node, payload=[])}
                ms.append((time.perf_counter() - t0) * 1000)
                shares.append(_share(found, full))
            out[str(ef)] = (statistics.mean(shares), min(shares), statistics.median(ms))
    finally:
        r.store.index = setting
    return out


def _share(found: set[Any], wanted: set[Any]) -> float:
    return len(found & wanted) / len(wanted) if wanted else 1.0


def upload_and_delete(pipeline: Pipeline, corpus: str, pdf: Path, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds from submitting ``pdf`` (a real ingestion job) to a search that finds it, and seconds to delete
    it again, per round (the same file: after its delete it is new again)."""
    uploads, deletes = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        info = pipeline.ingest.path(corpus, pdf)
        probe = " ".join(pipeline.catalog.pages.stored(corpus, info.id)[0].text.split()[:12])
        found = pipeline.search(corpus, SearchRequest(query=probe, top_k=10))
        uploads.append(time.perf_counter() - t0)
        if info.id not in {e.document_id for e in found.evidence}:
            raise AssertionError(f"the uploaded {pdf.name} is not found by its own first words: {probe!r}")
        t0 = time.perf_counter()
        pipeline.job_writer.delete_document(corpus, info.id)
        deletes.append(time.perf_counter() - t0)
    return uploads, deletes


def forced_reweight(pipeline: Pipeline, corpus: str) -> float:
    """Seconds of a BM25 re-weight of every page and of the re-indexing it leaves (``mmrag reweight-bm25``)."""
    return bm25_stats.reweight(pipeline.catalog, pipeline.store, corpus).seconds


BYTES_PER_VALUE = {"float32": 4.0, "float16": 2.0, "turbo8": 1.0, "turbo4": 0.5}
"""Bytes per stored value of each datatype (TurboQuant's codes; their per-vector scale not counted)."""


def vector_footprint(pipeline: Pipeline, corpus: str, names: list[str], sample: int = 200) -> dict[str, float]:
    """Bytes per page of each named vector as stored (values x their datatype; sparse: index + value, 8 bytes
    per non-zero), averaged over the first ``sample`` points; HNSW links and quantised copies not included."""
    spaces = pipeline.retriever.corpus_spaces(pipeline.catalog.corpora.config(corpus))
    specs = {s.name: s for space in spaces.values() for s in space.specs()}
    hits = pipeline.store.scroll(corpus, limit=sample, with_vectors=names)
    out = {}
    for name in names:
        spec, total = specs[name], 0.0
        for h in hits:
            v = h.vectors.get(name)
            if v is None:
                continue
            if hasattr(v, "indices"):
                total += 8 * len(v.indices)
            else:
                values = sum(len(row) for row in v) if spec.kind == "multivector" else len(v)
                total += values * BYTES_PER_VALUE[spec.datatype]
        out[name] = total / max(len(hits), 1)
    return out


def disk_by_vector(shard: Path) -> dict[str, int]:
    """Bytes on disk of the shard's segments by part (``vector_storage-text``, ``payload_storage``, the HNSW
    index of each vector...), summed over segments; largest first."""
    out: dict[str, int] = {}
    for p in shard.rglob("*"):
        if p.is_file():
            rel = p.relative_to(shard).parts
            key = rel[2] if rel[0] == "segments" and len(rel) > 3 else rel[-1]
            out[key] = out.get(key, 0) + p.stat().st_blocks * 512
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def resident_by_part(root: Path, pid: int | str = "self") -> dict[str, int]:
    """Bytes of the files under ``root`` (a store's folder) resident in process ``pid``, by collection and part
    (``sec10q/vector_storage-text``, ``sec10q/payload_index``...), summed over segments: the proportional set
    size (Pss) of their mappings, so that a file the engine maps twice (it maps its vector files once to read and
    once to write) counts once, as the memory it takes. The engine's heap (its in-RAM sparse indexes, the id
    tracker, buffers) is anonymous memory and not here: :func:`memory_by_kind` gives it."""
    out: dict[str, int] = {}
    key = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                path = head[5].strip() if len(head) > 5 else ""
                key = _part(Path(path).relative_to(root)) if path.startswith(f"{root}/") else None
            elif key is not None and head[0] == "Pss:":
                out[key] = out.get(key, 0) + int(head[1]) * 1024
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _part(rel: Path) -> str:
    """``<collection>/<part>`` of a file's path inside a store's folder (segments' parts by name)."""
    parts = rel.parts
    if len(parts) > 3 and parts[1] == "segments":
        return f"{parts[0]}/{parts[3]}"
    return f"{parts[0]}/{parts[-1]}"


def memory_by_kind(pid: int | str = "self") -> dict[str, int]:
    """Proportional set size of process ``pid`` by kind of mapping: ``anonymous`` (heaps: Python's objects, the
    engine's in-RAM indexes, the model's weights), ``files`` (mapped files: libraries, the store's mmaps) and the
    total, in bytes."""
    out = {"anonymous": 0, "files": 0}
    anon = True
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split(maxsplit=5)
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                anon = len(head) < 6 or not head[5].startswith("/")
            elif head[0] == "Pss:":
                out["anonymous" if anon else "files"] += int(head[1]) * 1024
    out["total"] = out["anonymous"] + out["files"]
    return out


def startup(data_dir: Path, corpus: str, queries: list[str], timeout_s: float = 900) -> dict[str, float]:
    """A fresh process opening ``data_dir`` as the server does (``build_pipeline``, ``warm_up``), answering
    its first search, then every query once: its seconds to ready and its memory (bench/_scale_startup.py)."""
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "bench._scale_startup", str(data_dir), corpus, str(t0),
                           json.dumps(queries)], capture_output=True, text=True, timeout=timeout_s,
                          env=dict(os.environ), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"start-up process failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def chunks(items: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]
