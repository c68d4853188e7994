"""The one query translator: our plan (:class:`QueryNode`, :class:`FilterSpec`, :class:`ScoreFormula`,
:class:`SpaceSpec`) as Qdrant's request models (``qdrant_client.models``).

The qdrant-client backend sends these models as they are; the embedded engine maps them one to one onto
its own types (``store/edge_request.py``), as qdrant-client maps the same models onto REST and gRPC.
What a plan means in Qdrant's terms is therefore written once, here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from qdrant_client import models

from mmrag.store.base import (
    FilterSpec,
    Hit,
    IndexSearch,
    QueryNode,
    ScoreFormula,
    SpaceSpec,
    SparseVec,
    VectorValue,
    check_field_name,
)

DATATYPES: dict[str, models.Datatype | None] = {"float32": None, "float16": models.Datatype.FLOAT16,
                                                "turbo8": models.Datatype.TURBO8, "turbo4": models.Datatype.TURBO4}
"""A space's datatype as Qdrant's (None: the engine's default, float32)."""


def vector_params(space: SpaceSpec) -> models.VectorParams:
    """A dense or multi-vector space's collection parameters. The original vectors are ``on_disk``: mapped and
    read as searches touch them (the page cache keeps what is used), not loaded whole when a segment opens;
    quantised copies, where a space has them, stay in RAM (``always_ram``). Loaded whole, an appendable segment
    brought its preallocated 32 MB chunk files into memory, empty or not: the soak's server grew by 112 MB per
    corpus at its first vacuum (docs/benchmarks.md, "Soak")."""
    multi = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM) \
        if space.kind == "multivector" else None
    hnsw = models.HnswConfigDiff(m=0) if not space.index else \
        None if space.graph is None else models.HnswConfigDiff(m=space.graph[0], ef_construct=space.graph[1])
    quant: Any = None
    if space.quantization == "binary":
        quant = models.BinaryQuantization(binary=models.BinaryQuantizationConfig(always_ram=True))
    elif space.quantization == "scalar":
        quant = models.ScalarQuantization(scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8,
                                                                                  always_ram=True))
    datatype = DATATYPES[space.datatype]
    return models.VectorParams(size=space.dim, distance=models.Distance.COSINE, multivector_config=multi,
                               hnsw_config=hnsw, quantization_config=quant, datatype=datatype, on_disk=True)


def sparse_params(space: SpaceSpec) -> models.SparseVectorParams:
    return models.SparseVectorParams(modifier=models.Modifier.IDF if space.idf else None)


def vector(value: VectorValue) -> list[float] | list[list[float]] | models.SparseVector:
    """(dim,) dense or (n, dim) multi-vector as nested lists; sparse as Qdrant's sparse vector."""
    if isinstance(value, SparseVec):
        return models.SparseVector(indices=list(value.indices), values=list(value.values))
    return np.asarray(value, dtype=np.float32).tolist()  # type: ignore[no-any-return]


def to_filter(flt: FilterSpec | None) -> models.Filter | None:
    """All conditions must hold; list values match any of their items; ranges are inclusive."""
    if flt is None or flt.empty():
        return None
    must: list[Any] = []
    for key, value in flt.match.items():
        check_field_name(key)
        match: Any = models.MatchAny(any=list(value)) if isinstance(value, list | tuple | set) \
            else models.MatchValue(value=value)
        must.append(models.FieldCondition(key=key, match=match))
    for key, (gte, lte) in flt.ranges.items():
        check_field_name(key)
        must.append(models.FieldCondition(key=key, range=models.Range(gte=gte, lte=lte)))
    return models.Filter(must=must)


def formula(spec: ScoreFormula) -> models.FormulaQuery:
    """``$score[0] * (1 + sum(priors[i] * $score[i + 1]) + sum(boost for each condition))``."""
    prior: list[Any] = [1.0] + [models.MultExpression(mult=[w, f"$score[{i + 1}]"])
                                for i, w in enumerate(spec.priors)]
    for boost, flt in spec.boosts:
        condition = to_filter(flt)
        if condition is not None:
            prior.append(models.MultExpression(mult=[boost, condition]))
    factors: list[Any] = ["$score[0]", models.SumExpression(sum=prior)]
    defaults: dict[str, Any] = {f"$score[{i}]": 0.0 for i in range(len(spec.priors) + 1)}
    return models.FormulaQuery(formula=models.MultExpression(mult=factors), defaults=defaults)


def query(node: QueryNode) -> Any:
    """How the node scores: a vector (nearest by ``node.using``), a formula, a fusion, or None (its filter)."""
    if node.vector is not None:
        return vector(node.vector)
    if node.formula is not None:
        return formula(node.formula)
    if node.fusion == "rrf":
        return models.RrfQuery(rrf=models.Rrf(k=node.rrf_k, weights=node.weights))
    if node.fusion == "dbsf":
        return models.FusionQuery(fusion=models.Fusion.DBSF)
    return None


IDF_OVER_LIVE_POINTS = models.IdfCorpusParams(corpus=models.Filter(must=[]))
"""BM25's IDF counted over the points that exist. Without it Qdrant counts over its posting lists, which keep
a deleted point until its segment is rebuilt (a reload, a vacuum): scores moved after a deletion, and
again after a restart (qdrant/qdrant#6735). With the match-all corpus filter both engines count the live
points, the same before and after a restart (tests/store/test_sparse_idf.py). It costs a query a filter
check per posting of its terms (``python -m bench.bm25_idf_cost``), so the embedded store sends it only for
collections that have had a deletion or a rewritten point (``live_idf``: a rewrite leaves an old version in the
posting lists too); without either both counts are the same."""


def search_params(node: QueryNode, index: IndexSearch, points: int, live_idf: bool = True) -> models.SearchParams:
    """The stage's search parameters in a collection of ``points`` points. A stage that scores with a dense or
    multi-vector scans every point when ``index`` says so for that size (a sparse vector has its own inverted
    index, exact already) and otherwise walks HNSW with ``index.hnsw_ef``; ``node.exact`` always scans. A sparse
    stage counts its IDF over the live points when ``live_idf``."""
    dense = isinstance(node.vector, np.ndarray)
    exact = node.exact or (dense and index.exact(points))
    ef = index.hnsw_ef if dense and not exact else None
    return models.SearchParams(hnsw_ef=ef, quantization=models.QuantizationSearchParams(rescore=node.rescore),
                               exact=True if exact else None, idf=idf_params(node, live_idf))


def idf_params(node: QueryNode, live_idf: bool = True) -> models.IdfCorpusParams | None:
    """A sparse query's IDF population: the collection's live points when ``live_idf`` (ignored by spaces
    without IDF); else the engine's own count."""
    return IDF_OVER_LIVE_POINTS if live_idf and isinstance(node.vector, SparseVec) else None


def prefetches(node: QueryNode, index: IndexSearch, points: int, live_idf: bool = True) -> list[models.Prefetch] | None:
    """The node's children as Qdrant prefetches (None when it has none)."""
    return [prefetch(p, index, points, live_idf) for p in node.prefetch] or None


def prefetch(node: QueryNode, index: IndexSearch, points: int, live_idf: bool = True) -> models.Prefetch:
    return models.Prefetch(prefetch=prefetches(node, index, points, live_idf), query=query(node), using=node.using,
                           filter=to_filter(node.filter), limit=node.limit,
                           params=search_params(node, index, points, live_idf))


def with_payload(fields: list[str] | None) -> bool | list[str]:
    """Qdrant's ``with_payload`` of :meth:`mmrag.store.base.VectorStore.query`'s ``payload``."""
    return True if fields is None else (list(fields) or False)


def to_hit(point: Any) -> Hit:
    """A scored point or a record (score 0) of either engine."""
    vectors = point.vector if isinstance(point.vector, dict) else {}
    return Hit(id=str(point.id), score=float(getattr(point, "score", 0.0) or 0.0), payload=dict(point.payload or {}),
               vectors=vectors)
