"""The query plan as a pure function of (spaces, query, options): prefetch -> fusion -> MaxSim rerank.

Shape of the plan (one Qdrant query on either engine)::

    rerank by colpali MaxSim (limit top_k)           <- only when colpali is used
      └── formula: page * (1 + w * document + s * fit)   <- only with the document space
            ├── sentences: RRF (no cut)           <- only with sub-queries (sentences of a long query):
            │     one fusion below for the whole query, then one for each sub-query
            ├── fusion: DBSF, or weighted RRF (no cut)  <- only with >= 2 stages
            │     ├── text     dense chunks MaxSim (limit prefetch)
            │     ├── bm25     sparse IDF          (limit prefetch)
            │     ├── clip     dense               (limit prefetch)
            │     └── colpali  pooled multi-vector (limit prefetch)
            └── document: DBSF of doc_text, doc_bm25, each over every page of its chosen documents
                  (the best whole documents by that vector, chosen before: mmrag.retrieve.document_choice)

With ColPali the MaxSim rerank orders the formula's candidates by MaxSim alone: the document stage
then only decides which pages reach the rerank.

No node above the spaces' own stages cuts (a fusion or the formula keeps every point its parts found:
:func:`whole`), and the document stage's documents are chosen whole: the only cuts inside the engine are each
space's own ``limit``, where only pages of equal score (identical pages) can straddle it, and, before a MaxSim
rerank, the ``prefetch_limit`` candidates it scores. The final cut is the retriever's, ties by page id
(:func:`mmrag.retrieve.evidence.query_past_ties`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from mmrag.errors import InvalidInput
from mmrag.spaces.base import DocumentChoice, QueryInput, Space
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
    document_weight: float = 0.0  # weight of the document stage's evidence match (0: no document stage)
    prior_strength: float = 0.0  # weight of each document's fit to what the query names (organisation, period...)
    document_candidates: int = 1000  # pages the document stage scores at least (its chosen documents' pages)
    document_choice: Mapping[str, DocumentChoice] = field(default_factory=dict)  # vector -> its chosen documents
    document_fit: Mapping[str, float] = field(default_factory=dict)  # document id -> fit in (0, 1]
    sub_queries: tuple[str, ...] = ()  # sentences of the query scored on their own beside it (RRF); () none


def request_filter(request: SearchRequest) -> FilterSpec | None:
    """Documents, payload metadata, page range and evidence kinds as one conjunctive filter."""
    flt = FilterSpec()
    if request.document_ids:
        flt.match["document_id"] = list(request.document_ids)
    for key, value in request.metadata.items():
        if isinstance(value, float):  # no engine matches a float for equality: the one-point range does
            flt.ranges[f"meta.{key}"] = (value, value)
        else:
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


def document_space(spaces: Mapping[str, Space], names: list[str]) -> Space | None:
    """The document-level space among the used ``names`` (None without one)."""
    return next((spaces[n] for n in names if spaces[n].document_level), None)


def with_document_stage(spaces: Mapping[str, Space], names: list[str], query: QueryInput, page: QueryNode,
                        options: PlanOptions, flt: FilterSpec | None) -> QueryNode:
    """``page`` with a bounded prior from its document: ``page * (1 + w * document + s * fit)``, where
    ``document`` (in [0, 2]) is the match of the query with the document's evidence text over the documents
    ``options.document_choice`` holds (0 for the others) and ``fit`` (in [0, 1]) how well the document meets
    what the query names (:meth:`CorpusDocuments.match`); ``page`` itself without a document space. Nothing is
    filtered: a page whose document fits nothing keeps its own score, so the prior is at most ``1 + 2 w + s``."""
    space = document_space(spaces, names)
    terms = fit_terms(options)
    if space is None or not query.text or (options.document_weight <= 0 and not terms):
        return page
    document = space.chosen_documents_stage(query, options.document_choice, flt) \
        if options.document_weight > 0 else None
    if document is None and not terms:
        return page
    prefetch, priors = ([page, document], (options.document_weight,)) if document is not None else ([page], ())
    return QueryNode(limit=page.limit, prefetch=prefetch, formula=ScoreFormula(priors, terms))  # all of ``page``


def fit_terms(options: PlanOptions) -> tuple[tuple[float, FilterSpec], ...]:
    """The documents' fits as formula terms: one ``(s * fit, document in [...])`` per distinct fit."""
    if options.prior_strength <= 0:
        return ()
    by_fit: dict[float, list[str]] = defaultdict(list)
    for doc_id, fit in options.document_fit.items():
        if fit > 0:
            by_fit[fit].append(doc_id)
    return tuple((options.prior_strength * fit, FilterSpec(match={"document_id": sorted(ids)}))
                 for fit, ids in sorted(by_fit.items(), reverse=True))


def page_stage(spaces: Mapping[str, Space], names: list[str], query: QueryInput, options: PlanOptions,
               flt: FilterSpec | None) -> QueryNode | None:
    """The used spaces' stages for ``query``, fused when there are several; None when none can take it."""
    stages = prefetch_stages(spaces, names, query, options.prefetch_limit, flt)
    if len(stages) <= 1:
        return stages[0][1] if stages else None
    weights = [float(options.weights.get(n, 1.0)) for n, _ in stages]
    weighted = any(w != 1.0 for w in weights)
    fusion = "rrf" if weighted else options.fusion
    return QueryNode(limit=whole([n for _, n in stages]), prefetch=[n for _, n in stages],
                     fusion="dbsf" if fusion == "dbsf" else "rrf", rrf_k=options.rrf_k,
                     weights=weights if weighted else None)


def with_sentences(spaces: Mapping[str, Space], names: list[str], page: QueryNode, options: PlanOptions,
                   flt: FilterSpec | None) -> QueryNode:
    """``page`` (the whole query's page stage) fused by RRF with the page stage of each of
    ``options.sub_queries`` (sentences of the query, :func:`mmrag.retrieve.sentences.query_sentences`), so
    that a short question inside long instructions is also scored on its own; ``page`` itself without."""
    parts = [page, *filter(None, (page_stage(spaces, names, QueryInput(text=s), options, flt)
                                  for s in options.sub_queries))]
    if len(parts) < 2:
        return page
    return QueryNode(limit=whole(parts), prefetch=parts, fusion="rrf", rrf_k=options.rrf_k)


def whole(parts: list[QueryNode]) -> int:
    """A fusion's limit that keeps every point of its ``parts`` (the sum of their limits): a cut there would fall
    inside groups of equal fused scores (DBSF and RRF make many: identical pages, pages one list holds at the
    same rank) in the engine's own order; the cut happens after, where ties are broken by page id."""
    return sum(p.limit for p in parts)


def build_plan(spaces: Mapping[str, Space], names: list[str], query: QueryInput, options: PlanOptions,
               flt: FilterSpec | None) -> QueryNode:
    """One multi-stage query node; raises InvalidInput when no used space can take the query."""
    inner = page_stage(spaces, names, query, options, flt)
    if inner is None:
        raise InvalidInput(f"none of the spaces {names} can use this query (text spaces need words, "
                           "image queries need clip or colpali)")
    rerank = next((r for n in names if usable(spaces[n], query) and (r := spaces[n].rerank(query)) is not None),
                  None)
    inner = with_sentences(spaces, names, inner, options, flt)
    inner = with_document_stage(spaces, names, query, inner, options, flt)
    if rerank is None:
        inner.limit = options.top_k
        return inner
    using, vector = rerank
    inner.limit = options.prefetch_limit  # what the rerank scores (its full multi-vectors: the costly part)
    return QueryNode(limit=options.top_k, using=using, vector=vector, prefetch=[inner], filter=flt)
