"""The embedded engine: qdrant-edge-py (Qdrant's Rust engine in-process), one shard per corpus.

Lifecycle: one process owns ``root`` (engines are single-process); shards open lazily and
stay open; ``close`` flushes them. A lock per shard serialises writes.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from mmrag.errors import NotFound
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    PointRecord,
    QueryNode,
    ScoreFormula,
    SpaceSpec,
    SparseVec,
    VectorStore,
    VectorValue,
)


def _vector_params(space: SpaceSpec) -> qe.EdgeVectorParams:
    multi = qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim) if space.kind == "multivector" else None
    hnsw = None if space.index else qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000)
    quant: Any = None
    if space.quantization == "binary":
        quant = qe.BinaryQuantizationConfig(always_ram=True)
    elif space.quantization == "scalar":
        quant = qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, always_ram=True)
    datatype = qe.VectorStorageDatatype.Float16 if space.datatype == "float16" else None
    return qe.EdgeVectorParams(size=space.dim, distance=qe.Distance.Cosine, multivector_config=multi,
                               hnsw_config=hnsw, quantization_config=quant, datatype=datatype)


def edge_config(spec: CollectionSpec) -> qe.EdgeConfig:
    """The shard's configuration. No write-ahead log: every update is flushed before it returns (below),
    which is what the job writer counts on before it records a batch as written, so the log would only
    hold a second copy of every vector (about as many bytes as the vectors themselves)."""
    dense = {s.name: _vector_params(s) for s in spec.spaces if s.kind != "sparse"}
    sparse = {
        s.name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if s.idf else None)
        for s in spec.spaces if s.kind == "sparse"
    }
    return qe.EdgeConfig(vectors=dense, sparse_vectors=sparse, wal_enabled=False)


def _vec(value: VectorValue) -> Any:
    if isinstance(value, SparseVec):
        return qe.SparseVector(indices=list(value.indices), values=list(value.values))
    return np.asarray(value, dtype=np.float32).tolist()


def edge_filter(flt: FilterSpec | None) -> qe.Filter | None:
    if flt is None or flt.empty():
        return None
    must: list[Any] = []
    for key, value in flt.match.items():
        if isinstance(value, list | tuple | set):
            must.append(qe.FieldCondition(key=key, match=qe.MatchAny(list(value))))
        else:
            must.append(qe.FieldCondition(key=key, match=qe.MatchValue(value)))
    for key, (gte, lte) in flt.ranges.items():
        must.append(qe.FieldCondition(key=key, range=qe.RangeFloat(gte=gte, lte=lte)))
    return qe.Filter(must=must)


def _params(node: QueryNode) -> qe.SearchParams | None:
    return qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=node.rescore))


def edge_formula(formula: ScoreFormula) -> qe.Formula:
    E = qe.Expression
    prior = [E.Constant(1.0)] + [E.Mult([E.Constant(w), E.Variable(f"$score[{i + 1}]")])
                                 for i, w in enumerate(formula.priors)]
    for boost, flt in formula.boosts:
        condition = edge_filter(flt)
        if condition is not None:
            prior.append(E.Mult([E.Constant(boost), E.Condition(condition)]))
    factors = [E.Variable("$score[0]"), E.Sum(prior)]
    defaults: dict[str, Any] = {f"$score[{i}]": 0.0 for i in range(len(formula.priors) + 1)}
    return qe.Formula(E.Mult(factors), defaults=defaults)


def _scoring(node: QueryNode) -> Any:
    if node.vector is not None:
        return qe.Query.Nearest(_vec(node.vector), using=node.using)
    if node.formula is not None:
        return edge_formula(node.formula)
    if node.fusion == "rrf":
        return qe.Fusion.Rrf(k=node.rrf_k, weights=node.weights)
    if node.fusion == "dbsf":
        return qe.Fusion.Dbsf()
    return None


def _prefetch(node: QueryNode) -> qe.Prefetch:
    return qe.Prefetch(limit=node.limit, query=_scoring(node), prefetches=[_prefetch(p) for p in node.prefetch] or None,
                       filter=edge_filter(node.filter), params=_params(node))


def _hit(point: Any) -> Hit:
    vectors = point.vector if isinstance(point.vector, dict) else {}
    return Hit(id=str(point.id), score=float(getattr(point, "score", 0.0)), payload=dict(point.payload or {}),
               vectors=vectors)


class EdgeStore(VectorStore):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, qe.EdgeShard] = {}
        self._lock = threading.RLock()

    def _path(self, name: str) -> Path:
        return self.root / name

    def _shard(self, name: str) -> qe.EdgeShard:
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                if not self._path(name).exists():
                    raise NotFound(f"no vector collection for corpus {name!r}")
                shard = qe.EdgeShard.load(str(self._path(name)))
                self._shards[name] = shard
            return shard

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        with self._lock:
            if self._path(name).exists():
                return
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

    def has_collection(self, name: str) -> bool:
        return name in self._shards or self._path(name).exists()

    def upsert(self, name: str, points: list[PointRecord]) -> None:
        if not points:
            return
        edge_points = [qe.Point(id=p.id, vector={k: _vec(v) for k, v in p.vectors.items()}, payload=p.payload)
                       for p in points]
        with self._lock:
            shard = self._shard(name)
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
            shard.flush()

    def delete(self, name: str, flt: FilterSpec) -> None:
        f = edge_filter(flt)
        if f is None:
            raise ValueError("refusing to delete with an empty filter")
        with self._lock:
            shard = self._shard(name)
            shard.update(qe.UpdateOperation.delete_points_by_filter(f))
            shard.flush()

    def update_vectors(self, name: str, vectors: dict[str, dict[str, VectorValue]]) -> None:
        if not vectors:
            return
        points = [qe.PointVectors(id=pid, vector={k: _vec(v) for k, v in named.items()})
                  for pid, named in vectors.items()]
        with self._lock:
            shard = self._shard(name)
            shard.update(qe.UpdateOperation.update_vectors(points))
            shard.flush()

    def set_payload(self, name: str, flt: FilterSpec, payload: dict[str, Any]) -> None:
        condition = edge_filter(flt)
        if condition is None:
            raise ValueError("set_payload needs a filter")
        with self._lock:
            shard = self._shard(name)
            shard.update(qe.UpdateOperation.set_payload_by_filter(condition, payload))
            shard.flush()

    def query(self, name: str, node: QueryNode, *, with_vectors: list[str] | None = None) -> list[Hit]:
        request = qe.QueryRequest(
            limit=node.limit, query=_scoring(node), prefetches=[_prefetch(p) for p in node.prefetch] or None,
            filter=edge_filter(node.filter), with_payload=True, with_vector=with_vectors or False,
            params=_params(node),
        )
        return [_hit(p) for p in self._shard(name).query(request)]

    def count(self, name: str, flt: FilterSpec | None = None) -> int:
        return int(self._shard(name).count(qe.CountRequest(filter=edge_filter(flt), exact=True)))

    def scroll(self, name: str, flt: FilterSpec | None = None, limit: int = 10_000,
               with_vectors: list[str] | None = None) -> list[Hit]:
        records, _ = self._shard(name).scroll(qe.ScrollRequest(limit=limit, filter=edge_filter(flt), with_payload=True,
                                                               with_vector=with_vectors or False))
        return [_hit(r) for r in records]

    def optimize(self, name: str) -> None:
        """qdrant-edge builds HNSW graphs and quantised vectors only when asked: after each job."""
        with self._lock:
            shard = self._shard(name)
            shard.optimize()
            shard.flush()

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()
                shard.close()
            self._shards.clear()
