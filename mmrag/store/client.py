"""qdrant-client implementation: a Qdrant server (``url``) or qdrant-client's local mode
(``path`` / ``:memory:``, pure numpy: used in tests as the stand-in for the server code path).

Lifecycle: one client per process; collections are named ``mmrag_<corpus>``.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from mmrag.errors import NotFound, Unavailable
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

PREFIX = "mmrag_"


def _vector_params(space: SpaceSpec) -> models.VectorParams:
    multi = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM) \
        if space.kind == "multivector" else None
    hnsw = None if space.index else models.HnswConfigDiff(m=0)
    quant: Any = None
    if space.quantization == "binary":
        quant = models.BinaryQuantization(binary=models.BinaryQuantizationConfig(always_ram=True))
    elif space.quantization == "scalar":
        quant = models.ScalarQuantization(scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8,
                                                                                  always_ram=True))
    datatype = models.Datatype.FLOAT16 if space.datatype == "float16" else None
    return models.VectorParams(size=space.dim, distance=models.Distance.COSINE, multivector_config=multi,
                               hnsw_config=hnsw, quantization_config=quant, datatype=datatype)


def _vec(value: VectorValue) -> Any:
    if isinstance(value, SparseVec):
        return models.SparseVector(indices=list(value.indices), values=list(value.values))
    return np.asarray(value, dtype=np.float32).tolist()


def client_filter(flt: FilterSpec | None) -> models.Filter | None:
    if flt is None or flt.empty():
        return None
    must: list[Any] = []
    for key, value in flt.match.items():
        match: Any = models.MatchAny(any=list(value)) if isinstance(value, list | tuple | set) \
            else models.MatchValue(value=value)
        must.append(models.FieldCondition(key=key, match=match))
    for key, (gte, lte) in flt.ranges.items():
        must.append(models.FieldCondition(key=key, range=models.Range(gte=gte, lte=lte)))
    return models.Filter(must=must)


def client_formula(formula: ScoreFormula) -> models.FormulaQuery:
    prior: list[Any] = [1.0] + [models.MultExpression(mult=[w, f"$score[{i + 1}]"])
                                for i, w in enumerate(formula.priors)]
    for boost, flt in formula.boosts:
        condition = client_filter(flt)
        if condition is not None:
            prior.append(models.MultExpression(mult=[boost, condition]))
    factors: list[Any] = ["$score[0]", models.SumExpression(sum=prior)]
    defaults: dict[str, Any] = {f"$score[{i}]": 0.0 for i in range(len(formula.priors) + 1)}
    return models.FormulaQuery(formula=models.MultExpression(mult=factors), defaults=defaults)


def _scoring(node: QueryNode) -> Any:
    if node.vector is not None:
        return _vec(node.vector)
    if node.formula is not None:
        return client_formula(node.formula)
    if node.fusion == "rrf":
        return models.RrfQuery(rrf=models.Rrf(k=node.rrf_k, weights=node.weights))
    if node.fusion == "dbsf":
        return models.FusionQuery(fusion=models.Fusion.DBSF)
    return None


def _params(node: QueryNode) -> models.SearchParams:
    return models.SearchParams(quantization=models.QuantizationSearchParams(rescore=node.rescore))


def _prefetch(node: QueryNode) -> models.Prefetch:
    return models.Prefetch(
        prefetch=[_prefetch(p) for p in node.prefetch] or None, query=_scoring(node), using=node.using,
        filter=client_filter(node.filter), limit=node.limit, params=_params(node),
    )


def _hit(point: Any) -> Hit:
    vectors = point.vector if isinstance(point.vector, dict) else {}
    return Hit(id=str(point.id), score=float(getattr(point, "score", 0.0) or 0.0), payload=dict(point.payload or {}),
               vectors=vectors)


class QdrantClientStore(VectorStore):
    def __init__(self, *, url: str | None = None, path: str | None = None, api_key: str | None = None,
                 timeout_s: float = 30.0) -> None:
        try:
            if url:
                self.client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout_s))
            else:
                self.client = QdrantClient(path=path) if path and path != ":memory:" else QdrantClient(":memory:")
        except Exception as exc:
            raise Unavailable(f"cannot open Qdrant at {url or path}: {exc}") from exc
        self._lock = threading.RLock()  # local mode is not thread-safe

    @staticmethod
    def _name(name: str) -> str:
        return PREFIX + name

    def _require(self, name: str) -> str:
        if not self.has_collection(name):
            raise NotFound(f"no vector collection for corpus {name!r}")
        return self._name(name)

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        with self._lock:
            if self.has_collection(name):
                return
            self.client.create_collection(
                self._name(name),
                vectors_config={s.name: _vector_params(s) for s in spec.spaces if s.kind != "sparse"},
                sparse_vectors_config={
                    s.name: models.SparseVectorParams(modifier=models.Modifier.IDF if s.idf else None)
                    for s in spec.spaces if s.kind == "sparse"
                },
            )
            for key in spec.keyword_indexes:
                self.client.create_payload_index(self._name(name), key, models.PayloadSchemaType.KEYWORD)
            for key in spec.integer_indexes:
                self.client.create_payload_index(self._name(name), key, models.PayloadSchemaType.INTEGER)

    def delete_collection(self, name: str) -> None:
        with self._lock:
            if self.has_collection(name):
                self.client.delete_collection(self._name(name))

    def has_collection(self, name: str) -> bool:
        with self._lock:
            return bool(self.client.collection_exists(self._name(name)))

    def upsert(self, name: str, points: list[PointRecord]) -> None:
        if not points:
            return
        structs = [models.PointStruct(id=p.id, vector={k: _vec(v) for k, v in p.vectors.items()}, payload=p.payload)
                   for p in points]
        with self._lock:
            self.client.upsert(self._require(name), points=structs, wait=True)

    def delete(self, name: str, flt: FilterSpec) -> None:
        f = client_filter(flt)
        if f is None:
            raise ValueError("refusing to delete with an empty filter")
        with self._lock:
            self.client.delete(self._require(name), points_selector=models.FilterSelector(filter=f), wait=True)

    def update_vectors(self, name: str, vectors: dict[str, dict[str, VectorValue]]) -> None:
        if not vectors:
            return
        points = [models.PointVectors(id=pid, vector={k: _vec(v) for k, v in named.items()})
                  for pid, named in vectors.items()]
        with self._lock:
            self.client.update_vectors(self._require(name), points=points, wait=True)

    def set_payload(self, name: str, flt: FilterSpec, payload: dict[str, Any]) -> None:
        condition = client_filter(flt)
        if condition is None:
            raise ValueError("set_payload needs a filter")
        with self._lock:
            self.client.set_payload(self._require(name), payload=payload, points=condition, wait=True)

    def query(self, name: str, node: QueryNode, *, with_vectors: list[str] | None = None) -> list[Hit]:
        with self._lock:
            response = self.client.query_points(
                self._require(name), prefetch=[_prefetch(p) for p in node.prefetch] or None,
                query=_scoring(node), using=node.using, query_filter=client_filter(node.filter),
                limit=node.limit, with_payload=True, with_vectors=with_vectors or False,
                search_params=_params(node),
            )
        return [_hit(p) for p in response.points]

    def count(self, name: str, flt: FilterSpec | None = None) -> int:
        with self._lock:
            return int(self.client.count(self._require(name), count_filter=client_filter(flt), exact=True).count)

    def scroll(self, name: str, flt: FilterSpec | None = None, limit: int = 10_000,
               with_vectors: list[str] | None = None) -> list[Hit]:
        with self._lock:
            records, _ = self.client.scroll(self._require(name), scroll_filter=client_filter(flt), limit=limit,
                                            with_payload=True, with_vectors=with_vectors or False)
        return [_hit(r) for r in records]

    def close(self) -> None:
        with self._lock:
            self.client.close()
