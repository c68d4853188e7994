"""Qdrant's request models (as ``store/qdrant_request.py`` writes them) → the embedded engine's types.

qdrant-edge mirrors Qdrant's request models one to one, so this is a mapping of names only; what a
plan means is decided by the translator, not here. Only the models the translator writes are mapped.
"""

from __future__ import annotations

from typing import Any

import qdrant_edge as qe
from qdrant_client import models

_DATATYPES = {models.Datatype.FLOAT32: qe.VectorStorageDatatype.Float32,
              models.Datatype.FLOAT16: qe.VectorStorageDatatype.Float16,
              models.Datatype.TURBO8: qe.VectorStorageDatatype.Turbo8,
              models.Datatype.TURBO4: qe.VectorStorageDatatype.Turbo4}  # type: ignore[attr-defined]  # (0.9.0's stub
# lists Turbo8 and Turbo16 only; the engine has Turbo4: tests/store/test_datatype.py)


def vector_params(params: models.VectorParams) -> qe.EdgeVectorParams:
    multi = qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim) if params.multivector_config else None
    hnsw = None if params.hnsw_config is None else \
        qe.HnswIndexConfig(m=params.hnsw_config.m or 0, ef_construct=params.hnsw_config.ef_construct or 100,
                           full_scan_threshold=10_000)
    datatype = None if params.datatype is None else _DATATYPES[params.datatype]
    return qe.EdgeVectorParams(size=params.size, distance=qe.Distance.Cosine, multivector_config=multi,
                               hnsw_config=hnsw, quantization_config=_quantization(params.quantization_config),
                               datatype=datatype, memory=qe.Memory.Cold if params.on_disk else None)


def _quantization(quant: Any) -> Any:
    if isinstance(quant, models.BinaryQuantization):
        return qe.BinaryQuantizationConfig(always_ram=quant.binary.always_ram)
    if isinstance(quant, models.ScalarQuantization):
        assert quant.scalar.type == models.ScalarType.INT8, quant.scalar.type
        return qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, always_ram=quant.scalar.always_ram)
    assert quant is None, quant
    return None


def sparse_params(params: models.SparseVectorParams) -> qe.EdgeSparseVectorParams:
    return qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if params.modifier == models.Modifier.IDF else None)


def vector(value: Any) -> Any:
    """Nested lists pass as they are; a sparse vector becomes the engine's."""
    if isinstance(value, models.SparseVector):
        return qe.SparseVector(indices=value.indices, values=value.values)
    return value


def to_filter(flt: models.Filter | None) -> qe.Filter | None:
    return None if flt is None else _all_of(flt)


def _all_of(flt: models.Filter) -> qe.Filter:
    assert isinstance(flt.must, list) and not flt.should and not flt.must_not, flt
    return qe.Filter(must=[_condition(c) for c in flt.must])


def _condition(cond: object) -> qe.FieldCondition:
    assert isinstance(cond, models.FieldCondition), cond
    if cond.range is not None:
        assert isinstance(cond.range, models.Range), cond.range
        return qe.FieldCondition(key=cond.key, range=qe.RangeFloat(gte=cond.range.gte, lte=cond.range.lte))
    if isinstance(cond.match, models.MatchAny):
        return qe.FieldCondition(key=cond.key, match=qe.MatchAny(cond.match.any))
    assert isinstance(cond.match, models.MatchValue), cond.match
    return qe.FieldCondition(key=cond.key, match=qe.MatchValue(cond.match.value))


def _expression(expr: Any) -> qe.Expression:
    if isinstance(expr, str):
        return qe.Expression.Variable(expr)
    if isinstance(expr, int | float):
        return qe.Expression.Constant(float(expr))
    if isinstance(expr, models.MultExpression):
        return qe.Expression.Mult([_expression(e) for e in expr.mult])
    if isinstance(expr, models.SumExpression):
        return qe.Expression.Sum([_expression(e) for e in expr.sum])
    if isinstance(expr, models.Filter):
        return qe.Expression.Condition(_all_of(expr))
    raise TypeError(f"no edge expression for {type(expr).__name__}")


def query(q: Any, using: str | None) -> Any:
    if q is None:
        return None
    if isinstance(q, models.FormulaQuery):
        return qe.Formula(_expression(q.formula), defaults=q.defaults)
    if isinstance(q, models.RrfQuery):
        return qe.Fusion.Rrf(k=q.rrf.k or 60, weights=q.rrf.weights)
    if isinstance(q, models.FusionQuery):
        assert q.fusion == models.Fusion.DBSF, q.fusion
        return qe.Fusion.Dbsf()
    return qe.Query.Nearest(vector(q), using=using)


def search_params(params: models.SearchParams | None) -> qe.SearchParams | None:
    if params is None or (params.quantization is None and not params.exact and params.hnsw_ef is None
                          and params.idf is None):
        return None
    quantization = None if params.quantization is None else \
        qe.QuantizationSearchParams(rescore=params.quantization.rescore)
    idf = qe.IdfParams(corpus=to_filter(params.idf.corpus)) if isinstance(params.idf, models.IdfCorpusParams) else None
    return qe.SearchParams(hnsw_ef=params.hnsw_ef, quantization=quantization, exact=bool(params.exact), idf=idf)


def prefetches(items: list[models.Prefetch] | None) -> list[qe.Prefetch] | None:
    return [prefetch(p) for p in items] if items else None


def prefetch(p: models.Prefetch) -> qe.Prefetch:
    return qe.Prefetch(limit=p.limit, query=query(p.query, p.using), prefetches=prefetches(p.prefetch),  # type: ignore[arg-type]
                       filter=to_filter(p.filter), params=search_params(p.params))
