"""The query plan as a pure function of (spaces, query, options): prefetch -> fusion -> MaxSim rerank.

Shape of the plan (one Qdrant query on either engine)::

    rerank by colpali MaxSim (limit top_k)           <- only when colpali is used
      └── formula: page * (1 + w * document) * boosts     <- only with the document space
            ├── fusion: DBSF, or weighted RRF (limit prefetch)  <- only with >= 2 stages
            │     ├── text     dense chunks MaxSim (limit prefetch)
            │     ├── bm25     sparse IDF          (limit prefetch)
            │     ├── clip     dense               (limit prefetch)
            │     └── colpali  pooled multi-vector (limit prefetch)
            └── document: DBSF of doc_text, doc_bm25 (limit document_candidates)

With ColPali the MaxSim rerank orders the formula's candidates by MaxSim alone: the document stage
then only decides which pages reach the rerank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from mmrag.errors import InvalidInput
from mmrag.ingest.doc_evidence import query_periods
from mmrag.spaces.base import QueryInput, Space
from mmrag.store.base import FilterSpec, QueryNode, ScoreFormula
from mmrag.types import SearchRequest


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """What shapes a plan besides the spaces."""

    top_k: int  # results of the final stage
    prefetch_limit: int  # candidates per prefetch stage (and fused candidates before rerank)
    rrf_k: int  # reciprocal rank fusion constant
    weights: Mapping[str, float]  # space -> RRF weight (missing = 1.0)
    fusion: str = "rrf"  # "rrf" (weighted) or "dbsf" (distribution-based, unweighted)
    document_weight: float = 0.0  # weight of the document stage's score (0: no document stage)
    period_boost: float = 0.0  # added to the prior when the query names one of the page's document periods
    document_candidates: int = 1000  # pages the document stage scores (the best-matching documents' pages)
    entity_boost: float = 0.0  # boost of pages whose document's main entity the query names
    entities: tuple[str, ...] = ()  # the entities the query names (retrieve.documents.CorpusDocuments)
    recency_boost: float = 0.0  # boost of each series' latest document when the query asks for the latest
    latest: tuple[str, ...] = ()  # ids of each series' newest document (doc_evidence.latest_of_series)


def request_filter(request: SearchRequest) -> FilterSpec | None:
    """Documents, payload metadata, page range and evidence kinds as one conjunctive filter."""
    flt = FilterSpec()
    if request.document_ids:
        flt.match["document_id"] = list(request.document_ids)
    for key, value in request.metadata.items():
        flt.match[f"meta.{key}"] = value
    if request.kinds:
        flt.match["kind"] = list(request.kinds)
    if request.pages is not None:
        flt.ranges["page"] = (float(request.pages[0]), float(request.pages[1]))
    return None if flt.empty() else flt


def usable(space: Space, query: QueryInput) -> bool:
    return bool(query.text and space.takes_text_query) or (query.image is not None and space.takes_image_query)


def prefetch_stages(spaces: Mapping[str, Space], names: list[str], query: QueryInput, limit: int,
                    flt: FilterSpec | None) -> list[tuple[str, QueryNode]]:
    """(space, stage) for every used space that has something to say about this query."""
    stages = []
    for name in names:
        space = spaces[name]
        if usable(space, query):
            node = space.prefetch(query, limit, flt)
            if node is not None:
                stages.append((name, node))
    return stages


def with_document_stage(spaces: Mapping[str, Space], names: list[str], query: QueryInput, page: QueryNode,
                        options: PlanOptions, flt: FilterSpec | None) -> QueryNode:
    """``page`` with its documents' match as a prior, times soft boosts (formula ``page * (1 + w * document)
    * (1 + e * [the query names the document's entity]) * (1 + b * [... one of its periods]) * (1 + r *
    [the query asks for the latest and the document is the newest of its series])``); ``page`` itself
    without a document space. Boosts never filter: a page without them keeps its score."""
    space = next((spaces[n] for n in names if spaces[n].document_level), None)
    if space is None or options.document_weight <= 0 or not query.text:
        return page
    document = space.document_stage(query, options.document_candidates, flt)
    if document is None:
        return page
    periods = query_periods(query.text)
    boosts: list[tuple[float, FilterSpec]] = []
    if options.entities and options.entity_boost > 0:
        boosts.append((options.entity_boost, FilterSpec(match={"meta.doc.entities": list(options.entities)})))
    if periods and options.period_boost > 0:
        boosts.append((options.period_boost, FilterSpec(match={"meta.doc.periods": periods})))
    if options.latest and options.recency_boost > 0 and wants_recency(query.text):
        boosts.append((options.recency_boost, FilterSpec(match={"document_id": list(options.latest)})))
    return QueryNode(limit=options.prefetch_limit, prefetch=[page, document],
                     formula=ScoreFormula((options.document_weight,), tuple(boosts)))


RECENCY = re.compile(r"\b(?:latest|newest|most recent|up-to-date|(?:last|current) (?:quarter|year|month|period|"
                     r"report|version|release|edition|update|filing|10-[qk]))\b", re.I)


def wants_recency(text: str) -> bool:
    """Does the query ask for the newest document (``latest``, ``most recent``, ``current quarter``, ...)?
    A bare "current" or "recent" does not count ("CURRENT USER", "recent advances")."""
    return bool(RECENCY.search(text))


def build_plan(spaces: Mapping[str, Space], names: list[str], query: QueryInput, options: PlanOptions,
               flt: FilterSpec | None) -> QueryNode:
    """One multi-stage query node; raises InvalidInput when no used space can take the query."""
    stages = prefetch_stages(spaces, names, query, options.prefetch_limit, flt)
    if not stages:
        raise InvalidInput(f"none of the spaces {names} can use this query (text spaces need words, "
                           "image queries need clip or colpali)")
    rerank = next((r for n in names if usable(spaces[n], query) and (r := spaces[n].rerank(query)) is not None),
                  None)
    if len(stages) == 1:
        inner = stages[0][1]
    else:
        weights = [float(options.weights.get(n, 1.0)) for n, _ in stages]
        weighted = any(w != 1.0 for w in weights)
        fusion = "rrf" if weighted else options.fusion
        inner = QueryNode(limit=options.prefetch_limit, prefetch=[n for _, n in stages],
                          fusion="dbsf" if fusion == "dbsf" else "rrf", rrf_k=options.rrf_k,
                          weights=weights if weighted else None)
    inner = with_document_stage(spaces, names, query, inner, options, flt)
    if rerank is None:
        inner.limit = options.top_k
        return inner
    using, vector = rerank
    return QueryNode(limit=options.top_k, using=using, vector=vector, prefetch=[inner], filter=flt)
