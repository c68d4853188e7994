"""The embedded engine: qdrant-edge-py (Qdrant's Rust engine in-process), one shard per corpus.

Lifecycle: one process owns ``root`` (engines are single-process); shards open lazily and
stay open; ``close`` flushes them. A lock per store serialises writes. Plans are translated by the one
translator (``store/qdrant_request.py``, plan → Qdrant's request models), then mapped onto the engine's types
(``store/edge_request.py``).

BM25's IDF is the engine's own count (its posting lists). Those keep a deleted or rewritten point until its
segment is rebuilt: an appendable segment's index is rebuilt when the shard is opened, an optimised one when it
is vacuumed. So that a ranking never depends on whether the process restarted since a deletion, a shard that has
had a deletion or a rewrite of a point (a BM25 re-weight, a batch written again after a crash) is reopened
(:meth:`EdgeStore._reopen_if_stale`: at the end of the deletion or of the optimise, else before its next search;
with less than :data:`REOPEN_FREE_BYTES` free on the disk it waits, and the shard's sparse queries count over the
live points meanwhile): it then counts what a restart would (the live points of its appendable segment, an
optimised segment's deleted points until its vacuum). Counting over the live points always
(:data:`mmrag.store.qdrant_request.IDF_OVER_LIVE_POINTS`, what a Qdrant server is sent) costs every sparse query
a filter check per posting, which grows with the corpus (~25 ms a search at 250,000 pages); the reopening, warming
included, costs the deletion ~2.8 s at 250,000 pages and ~0.1 s at 5,000, searches waiting meanwhile
(docs/retrieval.md, "BM25's statistics").
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from mmrag.errors import NotFound
from mmrag.store import edge_request as er
from mmrag.store import qdrant_request as rq
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    IndexSearch,
    PointRecord,
    QueryNode,
    VectorStore,
    VectorValue,
    in_score_order,
)

REOPEN_FREE_BYTES = 256 << 20
"""The free space a shard's reopening needs on the data folder's disk: the engine maps new files as it opens a
shard and faults on them when the disk is full (SIGBUS: the process ends; a 1.7 MB shard needed 8-16 MB on
tmpfs). With less, the shard stays open and counts its IDF over the live points until there is room."""

VACUUM_MIN_VECTORS = 100
"""A segment is rebuilt without its deleted points once they are a fifth of it and it holds at least this many
(Qdrant's ``vacuum_min_vector_number``, 1,000 by default, the least it allows 100): a small corpus under
upload and delete churn otherwise grows its appendable segment, on disk and in memory, for its first ~1,000
points of churn, and its first vacuum lands as one step late in a day (the soak, issue 42)."""


def edge_config(spec: CollectionSpec) -> qe.EdgeConfig:
    """The shard's configuration. No write-ahead log: every update is flushed before it returns (below),
    which is what the job writer counts on before it records a batch as written, so the log would only
    hold a second copy of every vector (about as many bytes as the vectors themselves)."""
    dense = {s.name: er.vector_params(rq.vector_params(s)) for s in spec.spaces if s.kind != "sparse"}
    sparse = {s.name: er.sparse_params(rq.sparse_params(s)) for s in spec.spaces if s.kind == "sparse"}
    return qe.EdgeConfig(vectors=dense, sparse_vectors=sparse, wal_enabled=False,
                         optimizers=qe.EdgeOptimizersConfig(vacuum_min_vector_number=VACUUM_MIN_VECTORS))


class ShardGate:
    """Searches share the shards; reopening one waits for the searches in flight and holds new ones back."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._closing = False

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._closing)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._closing)
            self._closing = True
            self._cond.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            with self._cond:
                self._closing = False
                self._cond.notify_all()


def free_bytes(path: Path) -> int:
    """Free bytes on the disk of ``path``."""
    return shutil.disk_usage(path).free


def _warm(shard: qe.EdgeShard, folder: Path) -> None:
    """Touch what a search reads in a shard just opened: every vector scanned once (the engine maps its files
    afresh, and searches' walks through them faulted them in one by one: ~0.8 s of the first searches after a
    deletion at 250,000 pages, the first round of bench.scale's), each indexed payload field matched once (its
    index loads on first use), with a stored point's own vectors and values. Paid by the corpus's first use in
    a process and by the deletion that reopened the shard, not by the searches after them. A vector without an
    index (ColPali's full multi-vectors: only rescored, by id) is left as it is."""
    records, _ = shard.scroll(qe.ScrollRequest(limit=1, filter=None, with_payload=True, with_vector=True))
    if not records:
        return
    record = records[0]
    config = json.loads((folder / "edge_config.json").read_text()).get("vectors", {})
    named = record.vector if isinstance(record.vector, dict) else {}
    exact = qe.SearchParams(hnsw_ef=None, quantization=None, exact=True, idf=None)
    for using, value in named.items():
        if ((config.get(using) or {}).get("hnsw_config") or {}).get("m") == 0:
            continue
        shard.query(qe.QueryRequest(limit=1, query=qe.Query.Nearest(value, using=using), prefetches=None, filter=None,
                                    with_payload=False, with_vector=False, score_threshold=None, params=exact))
    for key in shard.info().payload_schema:
        field = (record.payload or {}).get(key)
        if isinstance(field, str):
            flt = FilterSpec(match={key: field})
        elif isinstance(field, int | float):
            flt = FilterSpec(ranges={key: (float(field), float(field))})
        else:
            continue
        shard.count(qe.CountRequest(filter=_filter(flt), exact=True))


def _vectors(named: dict[str, VectorValue]) -> dict[str, Any]:
    return {k: er.vector(rq.vector(v)) for k, v in named.items()}


def _filter(flt: FilterSpec | None) -> qe.Filter | None:
    return er.to_filter(rq.to_filter(flt))


class EdgeStore(VectorStore):
    def __init__(self, root: Path, index: IndexSearch = IndexSearch()) -> None:
        self.root = root
        self.index = index
        self.root.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, qe.EdgeShard] = {}
        self._stale: set[str] = set()  # shards with a deletion or a rewrite since they were opened
        self._lock = threading.RLock()  # lock order: the gate first, then this
        self._gate = ShardGate()
        self.reopened = 0  # shards reopened for their counts (a figure for tests and benchmarks)

    def _path(self, name: str) -> Path:
        return self.root / name

    def _marker(self, name: str) -> Path:
        """An older version's mark of a shard that had a deletion (its IDF was counted over the live points);
        removed where found: the reopening replaced it."""
        return self.root / f"{name}.deleted"

    def _shard(self, name: str) -> qe.EdgeShard:
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                if not self._path(name).exists():
                    raise NotFound(f"no vector collection for corpus {name!r}")
                shard = qe.EdgeShard.load(str(self._path(name)))
                _warm(shard, self._path(name))
                self._marker(name).unlink(missing_ok=True)
                self._shards[name] = shard
            return shard

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        with self._lock:
            if self._path(name).exists():
                return
            self._marker(name).unlink(missing_ok=True)  # of a collection of that name deleted before
            self._stale.discard(name)
            shard = qe.EdgeShard.create(str(self._path(name)), edge_config(spec))
            for key in spec.keyword_indexes:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
            for key in spec.integer_indexes:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Integer))
            self._shards[name] = shard

    def delete_collection(self, name: str) -> None:
        with self._lock:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self._path(name), ignore_errors=True)
            self._marker(name).unlink(missing_ok=True)
            self._stale.discard(name)

    def has_collection(self, name: str) -> bool:
        return name in self._shards or self._path(name).exists()

    def upsert(self, name: str, points: list[PointRecord]) -> None:
        if not points:
            return
        edge_points = [qe.Point(id=p.id, vector=_vectors(p.vectors), payload=p.payload)
                       for p in points]
        with self._lock:
            shard = self._shard(name)
            if name not in self._stale and shard.retrieve([p.id for p in points], with_payload=False,
                                                          with_vector=False):
                self._stale.add(name)  # a point written again (a batch redone after a crash)
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
            shard.flush()

    def _reopen_if_stale(self, name: str) -> None:
        """Reopen a shard written with a deletion or a rewrite since it was opened, so that its BM25 counts are
        a restart's (the module's docstring): at the end of a deletion and of an optimise (a re-weight's
        rewrites end with one), else before the next search (a batch written again after a crash). Never under
        ``_lock`` (lock order: the gate, then the lock)."""
        if name not in self._stale or free_bytes(self.root) < REOPEN_FREE_BYTES:
            return
        with self._gate.exclusive(), self._lock:
            if name not in self._stale:
                return
            self._stale.discard(name)
            shard = self._shards.pop(name, None)
            if shard is None:
                return  # opened afresh at its next use
            shard.flush()
            shard.close()
            self._shard(name)
            self.reopened += 1

    def delete(self, name: str, flt: FilterSpec) -> None:
        f = _filter(flt)
        if f is None:
            raise ValueError("refusing to delete with an empty filter")
        with self._lock:
            shard = self._shard(name)
            self._stale.add(name)
            shard.update(qe.UpdateOperation.delete_points_by_filter(f))
            shard.flush()
        self._reopen_if_stale(name)  # here, not in the next search (an upload's first search after it)

    def update_vectors(self, name: str, vectors: dict[str, dict[str, VectorValue]]) -> None:
        if not vectors:
            return
        points = [qe.PointVectors(id=pid, vector=_vectors(named))
                  for pid, named in vectors.items()]
        with self._lock:
            shard = self._shard(name)
            self._stale.add(name)  # a BM25 re-weight: every rewritten point leaves an old version
            shard.update(qe.UpdateOperation.update_vectors(points))
            shard.flush()

    def set_payload(self, name: str, flt: FilterSpec, payload: dict[str, Any]) -> None:
        condition = _filter(flt)
        if condition is None:
            raise ValueError("set_payload needs a filter")
        with self._lock:
            shard = self._shard(name)
            shard.update(qe.UpdateOperation.set_payload_by_filter(condition, payload))
            shard.flush()

    def query(self, name: str, node: QueryNode, *, with_vectors: list[str] | None = None,
              payload: list[str] | None = None) -> list[Hit]:
        self._reopen_if_stale(name)
        with self._gate.reading():
            shard = self._shard(name)
            points = int(shard.count(qe.CountRequest(filter=None, exact=False))) \
                if self.index.full_scan_points else 0  # microseconds: the segments' sizes
            live = name in self._stale  # not reopened (no room): count over the live points
            request = qe.QueryRequest(
                limit=node.limit, query=er.query(rq.query(node), node.using),
                prefetches=er.prefetches(rq.prefetches(node, self.index, points, live)),
                filter=_filter(node.filter), with_payload=rq.with_payload(payload),
                with_vector=with_vectors or False, score_threshold=node.score_threshold,
                params=er.search_params(rq.search_params(node, self.index, points, live)),
            )
            found = shard.query(request)
        return in_score_order([rq.to_hit(p) for p in found])

    def count(self, name: str, flt: FilterSpec | None = None) -> int:
        with self._gate.reading():
            return int(self._shard(name).count(qe.CountRequest(filter=_filter(flt), exact=True)))

    def scroll(self, name: str, flt: FilterSpec | None = None, limit: int = 10_000,
               with_vectors: list[str] | None = None) -> list[Hit]:
        with self._gate.reading():
            records, _ = self._shard(name).scroll(qe.ScrollRequest(limit=limit, filter=_filter(flt), with_payload=True,
                                                                   with_vector=with_vectors or False))
        return [rq.to_hit(r) for r in records]

    def optimize(self, name: str) -> None:
        """qdrant-edge builds HNSW graphs and quantised vectors only when asked: after each job."""
        with self._lock:
            shard = self._shard(name)
            shard.optimize()
            shard.flush()
        self._reopen_if_stale(name)  # after a re-weight's rewrites (which end with this optimise)

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()
                shard.close()
            self._shards.clear()
