"""The retriever: validate a request, build one multi-stage plan, run it, hydrate evidence.

Plan (see :mod:`mmrag.retrieve.plan`): every space the request uses contributes a prefetch
stage; several stages are fused (DBSF by default, weighted RRF on request); ColPali's full multi-vectors rerank the
fused candidates by MaxSim. All of it is one Qdrant query, on either store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig, IngestConfig
from mmrag.errors import InvalidInput, Unavailable
from mmrag.imaging import decode_query_image
from mmrag.retrieve.candidates import CandidateDepth, PageTraitsCache, candidate_hit, gather_candidates, located
from mmrag.retrieve.document_choice import choose_documents
from mmrag.retrieve.document_prior import CorpusDocuments, DocumentsCache
from mmrag.retrieve.evidence import (
    PLAN_TIE_MARGIN,
    annotate,
    merge_duplicates,
    order_hits,
    query_past_ties,
    rank_key,
    rank_table,
)
from mmrag.retrieve.page_prior import PagePrior, page_factors, reprioritise
from mmrag.retrieve.plan import PlanOptions, build_plan, document_space, request_filter, usable
from mmrag.retrieve.rank_features import FEATURES, CandidatePage, feature_matrix
from mmrag.retrieve.ranker import SHIPPED, PageRanker, load_ranker
from mmrag.retrieve.request_checks import check_image_query, checked_spaces
from mmrag.retrieve.sentences import query_sentences
from mmrag.retrieve.snippets import snippet
from mmrag.retrieve_config import RetrieveConfig
from mmrag.spaces.base import DocumentChoice, QueryInput, Space
from mmrag.store.base import FilterSpec, Hit, QueryNode, VectorStore
from mmrag.types import (
    Evidence,
    EvidenceKind,
    SearchRequest,
    SearchResult,
)

log = logging.getLogger(__name__)
RANKER_FILE = "page_ranker.txt"  # a corpus's own ranker, in its folder (mmrag rank train --corpus)


@dataclass(frozen=True, slots=True)
class RankerChoice:
    """Which ranker a corpus's searches use: ``own`` (trained on its judgments), ``shipped``,
    ``configured`` (a model path in MMRAG_RETRIEVE__RANKING__RANKER) or ``off``; ``problem`` why an own model
    present in the corpus's folder is passed over."""

    active: str
    model: PageRanker | None
    problem: str | None = None


class Retriever:
    """Lifecycle: built once by the composition root; ``search`` is thread-safe."""

    def __init__(self, catalog: Catalog, store: VectorStore, spaces: Mapping[str, Space],
                 config: RetrieveConfig, ingest: IngestConfig) -> None:
        self.catalog, self.store, self.spaces, self.config, self.ingest = catalog, store, spaces, config, ingest
        self._configured: dict[str, dict[str, Space]] = {}  # corpus config JSON -> spaces with its options
        self.documents = DocumentsCache(catalog)
        self.page_traits = PageTraitsCache(catalog)
        if config.ranking.ranker != "off" and not self.default_ranker.is_file():
            raise InvalidInput(f"MMRAG_RETRIEVE__RANKING__RANKER={config.ranking.ranker!r}: no such model file; give "
                               "shipped, off or the path of a model written by `mmrag rank train --out`")
        self._warned: dict[str, str] = {}  # own model path -> the problem already logged

    @property
    def default_ranker(self) -> Path:
        """The model file of ``MMRAG_RETRIEVE__RANKING__RANKER`` (the shipped one for ``shipped`` and ``off``)."""
        return SHIPPED if self.config.ranking.ranker in ("shipped", "off") else Path(self.config.ranking.ranker)

    def corpus_spaces(self, corpus_config: CorpusConfig) -> dict[str, Space]:
        key = corpus_config.model_dump_json()
        spaces = self._configured.get(key)
        if spaces is None:
            spaces = {n: s.for_corpus(corpus_config) for n, s in self.spaces.items()}
            self._configured[key] = spaces
        return spaces

    def validate(self, corpus_config: CorpusConfig, request: SearchRequest) -> list[str]:
        """Check bounds and options; return the spaces to use (:mod:`mmrag.retrieve.request_checks`)."""
        return checked_spaces(self.config, self.spaces, corpus_config, request)

    def check_image_query(self, corpus_config: CorpusConfig, spaces: list[str] | None) -> None:
        """Refuse an image query before its image is decoded (:mod:`mmrag.retrieve.request_checks`)."""
        check_image_query(self.spaces, corpus_config, spaces)

    def _query_input(self, corpus: str, request: SearchRequest) -> QueryInput:
        data = request.image
        if request.image_page_id is not None:
            data = self.catalog.pages.image(corpus, request.image_page_id)
        image = None if data is None else decode_query_image(data, max_pixels=self.config.max_query_image_pixels)
        return QueryInput(text=request.query.strip(), image=image)

    def options(self, request: SearchRequest, fit: Mapping[str, float] | None = None,
                sub_queries: tuple[str, ...] = (), chosen: Mapping[str, DocumentChoice] | None = None) -> PlanOptions:
        """Plan options of ``request``; ``fit``: each document's fit to what the query names (the document
        stage's prior, :meth:`mmrag.retrieve.document_prior.CorpusDocuments.match`); ``sub_queries``: the
        query's sentences scored on their own (:meth:`sub_queries`); ``chosen``: the documents the document
        stage scores (:func:`mmrag.retrieve.document_choice.choose_documents`)."""
        c, r = self.config, self.config.ranking
        return PlanOptions(top_k=request.top_k, prefetch_limit=request.prefetch_limit or c.prefetch_limit,
                           rrf_k=request.rrf_k or c.rrf_k, weights=dict(request.weights or {}),
                           fusion=request.fusion or ("rrf" if request.weights else c.fusion),
                           document_weight=r.document_weight if r.document_stage else 0.0,
                           prior_strength=r.prior_strength, document_candidates=r.document_candidates,
                           document_fit=dict(fit or {}), sub_queries=sub_queries, document_choice=dict(chosen or {}))

    def sub_queries(self, documents: CorpusDocuments | None, text: str) -> tuple[str, ...]:
        """The sentences of a long query that run as their own sub-queries (``sentence_queries``): with
        ``named`` those that name something of the corpus's documents (``documents``: None without the
        document stage, then none); () for a one-sentence query or with ``off``."""
        mode = self.config.sentence_queries
        sentences = query_sentences(text) if mode != "off" and text else []
        if len(sentences) < 2:
            return ()
        if mode == "named":
            sentences = [s for s in sentences if documents is not None and documents.match(s).named]
        return tuple(sentences)

    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        t0 = time.perf_counter()
        spaces, names, query, fit, node = self.prepare(corpus, request)
        t1 = time.perf_counter()
        ranker = self.ranker(corpus, query, node)
        contributions: dict[str, dict[str, float]] = {}
        factors: dict[str, float] = {}
        if ranker is not None:
            features = ranker.features
            candidates = self.candidates(corpus, spaces, names, query, fit, node, request,
                                         extended=any(f not in FEATURES for f in features))
            rows = feature_matrix(query.text, candidates, features)
            scores = [float(s) for s in ranker.score(rows)]
            best = sorted(range(len(candidates)), key=lambda i: rank_key(scores[i], candidates[i].page_id))
            hits = [candidate_hit(candidates[i], scores[i]) for i in best[:request.top_k]]
            hits = self.finish_hits(corpus, spaces, names, query, hits)
            if request.explain:
                contributions = explain_ranker(ranker, candidates, rows, {h.payload["page_id"] for h in hits})
        else:
            hits, factors = self.prior_ranked(corpus, names, query, node, request)
        t2 = time.perf_counter()
        evidence = merge_duplicates(self.hydrate(corpus, hits, query))
        if request.explain:
            self.explain(corpus, spaces, evidence, query, names, request)
            for ev in evidence:
                if ev.page_id in factors:
                    ev.scores["page_prior"] = round(factors[ev.page_id], 4)  # the factor, not a stage's score
                for feature, value in contributions.get(ev.page_id, {}).items():
                    ev.scores[f"ranker.{feature}"] = value
        t3 = time.perf_counter()
        return SearchResult(evidence=evidence, timings={"plan": t1 - t0, "query": t2 - t1, "hydrate": t3 - t2,
                                                        "total": t3 - t0})

    def prepare(self, corpus: str, request: SearchRequest
                ) -> tuple[dict[str, Space], list[str], QueryInput, Mapping[str, float], QueryNode]:
        """Validate ``request``, embed its query and build its first-stage plan: (spaces, names used,
        query, each document's fit, plan)."""
        corpus_config = self.catalog.corpora.config(corpus)
        names = self.validate(corpus_config, request)
        spaces = self.corpus_spaces(corpus_config)
        query = self._query_input(corpus, request)
        fit: Mapping[str, float] = {}
        documents = None
        chosen: dict[str, DocumentChoice] = {}
        space = document_space(spaces, names)
        if space is not None and query.text and self.config.ranking.document_stage:
            documents = self.documents.get(corpus)
            fit = documents.match(query.text).fit
            if self.config.ranking.document_weight > 0:
                chosen = choose_documents(self.store, self.catalog, corpus, space, query,
                                          self.config.ranking.document_candidates, request_filter(request), documents)
        options = self.options(request, fit, self.sub_queries(documents, query.text), chosen)
        node = build_plan(spaces, names, query, options, request_filter(request))
        return spaces, names, query, fit, node

    def ranker(self, corpus: str, query: QueryInput, node: QueryNode) -> PageRanker | None:
        """The learned ranker of a text query (:meth:`ranker_in_use`); None when it is off, for an image
        alone and after a MaxSim rerank (which orders by MaxSim alone)."""
        if not query.text or node.using is not None:
            return None
        return self.ranker_in_use(corpus).model

    def ranker_in_use(self, corpus: str) -> RankerChoice:
        """The corpus's own model (``RANKER_FILE`` in its folder) where it has a usable one, else
        ``MMRAG_RETRIEVE__RANKING__RANKER``'s. An own model that cannot be used (unreadable, other features) is
        passed over with its reason and a warning; a configured one that cannot be used is Unavailable."""
        own = self.catalog.corpora.folder(corpus) / RANKER_FILE
        problem = None
        if own.is_file():
            try:
                return RankerChoice("own", load_ranker(own))
            except InvalidInput as exc:
                problem = exc.message
                if self._warned.setdefault(str(own), problem) is problem:
                    log.warning("corpus %s: its own ranker is passed over: %s", corpus, problem)
        if self.config.ranking.ranker == "off":
            return RankerChoice("off", None, problem)
        try:
            return RankerChoice(self.config.ranking.ranker if self.config.ranking.ranker == "shipped" else "configured",
                                load_ranker(self.default_ranker), problem)
        except InvalidInput as exc:
            raise Unavailable(f"{exc.message}; set MMRAG_RETRIEVE__RANKING__RANKER to shipped, off or a model of this "
                              "version") from exc

    def candidates(self, corpus: str, spaces: Mapping[str, Space], names: list[str], query: QueryInput,
                   fit: Mapping[str, float], node: QueryNode, request: SearchRequest, extended: bool = False
                   ) -> list[CandidatePage]:
        """The ranker's candidates of a prepared search (:mod:`mmrag.retrieve.candidates`); ``extended``: their
        traits with labels, captions and terms (a model of the reference or context features)."""
        r = self.config.ranking
        depth = CandidateDepth(max(request.top_k, r.rank_depth), r.rank_documents, r.rank_document_pages)
        first = order_hits(located(self.catalog, corpus, query_past_ties(self.store, corpus, node, depth.first_stage,
                                                                         PLAN_TIE_MARGIN, payload=[])),
                           depth.first_stage)
        return gather_candidates(self.store, self.catalog, self.page_traits, corpus, spaces, names, query,
                                 request_filter(request), first, fit, depth, extended)

    def finish_hits(self, corpus: str, spaces: Mapping[str, Space], names: list[str], query: QueryInput,
                    hits: list[Hit]) -> list[Hit]:
        """The ranker's ``hits`` with their full payloads (the candidates' queries read none) and, where the
        text space is used, their pages' text vectors (the snippet picks the best chunk by them): one store
        call for the top pages. A page deleted since the candidates' query (its document deleted meanwhile)
        is left out: it has no payload to show."""
        if not hits:
            return hits
        ids = [h.payload["page_id"] for h in hits]
        node = spaces["text"].prefetch(query, len(ids), FilterSpec(match={"page_id": ids})) if "text" in names \
            else None
        found = self.store.query(corpus, node, with_vectors=["text"]) if node is not None else []
        full = {h.payload["page_id"]: h for h in found}
        rest = [pid for pid in ids if pid not in full]  # no text space here, or a page without text vectors
        if rest:
            stored = self.store.scroll(corpus, FilterSpec(match={"page_id": rest}), limit=len(rest))
            full.update((h.payload["page_id"], h) for h in stored)
        return [replace(h, payload=full[pid].payload, vectors=full[pid].vectors or h.vectors)
                for h in hits if (pid := h.payload["page_id"]) in full]

    def prior_ranked(self, corpus: str, names: list[str], query: QueryInput, node: QueryNode,
                     request: SearchRequest) -> tuple[list[Hit], dict[str, float]]:
        """The first stage's best ``top_k`` with the hand-set page prior (``MMRAG_RETRIEVE__RANKING__RANKER=off``)."""
        with_vectors = ["text"] if "text" in names and query.text else None
        prior = self.page_prior(query, node)
        fetch = max(request.top_k, prior.depth if prior.on else 0)
        hits = order_hits(query_past_ties(self.store, corpus, node, max(node.limit, fetch), with_vectors=with_vectors),
                          fetch)
        factors: dict[str, float] = {}
        if prior.on:
            head = hits[:prior.depth]
            texts = self.catalog.pages.plain_texts(corpus, [h.payload["page_id"] for h in head])
            counts = self.catalog.documents.page_counts(corpus, [h.payload["document_id"] for h in head]) \
                if prior.title_weight > 0 else {}
            factors = page_factors(hits, {k: v.split() for k, v in texts.items()}, query.text, prior, counts)
            hits = reprioritise(hits, factors, prior.depth)
        return hits[:request.top_k], factors

    def page_prior(self, query: QueryInput, node: QueryNode) -> PagePrior:
        """The page's own prior of a text query (:mod:`mmrag.retrieve.page_prior`); off for an image alone
        and after a MaxSim rerank (``node.using``: the rerank orders by MaxSim alone)."""
        r = self.config.ranking
        on = bool(query.text) and node.using is None
        return PagePrior(r.title_weight, r.figure_weight, r.page_prior_depth if on else 0)

    def hydrate(self, corpus: str, hits: list[Hit], query: QueryInput) -> list[Evidence]:
        words = self.catalog.pages.words(corpus, [h.payload["page_id"] for h in hits])
        qvec = query.cache.get("text")
        out = []
        for hit in hits:
            p = hit.payload
            text, boxes = snippet(words.get(p["page_id"], []), query.text, self.ingest.chunk_words,
                                  self.ingest.chunk_overlap, _as_array(hit.vectors.get("text")),
                                  qvec[0] if isinstance(qvec, np.ndarray) else None)
            out.append(Evidence(
                kind=EvidenceKind(p.get("kind", "page")), corpus=corpus, document_id=p["document_id"],
                filename=p["filename"], page_id=p["page_id"], page=int(p["page"]), score=hit.score,
                snippet=text, boxes=boxes, metadata=dict(p.get("meta") or {}), section=list(p.get("section") or []),
            ))
        return out

    def explain(self, corpus: str, spaces: Mapping[str, Space], evidence: list[Evidence], query: QueryInput,
                names: list[str], request: SearchRequest) -> None:
        """Per-space ranks and scores (each prefetch stage run alone) and the MaxSim rerank score."""
        flt = request_filter(request)
        limit = request.prefetch_limit or self.config.prefetch_limit
        for name in names:
            space = spaces[name]
            if not usable(space, query):
                continue
            node = space.prefetch(query, limit, flt)
            if node is not None:
                annotate(evidence, name, rank_table(self.store.query(corpus, node)))
            rerank = space.rerank(query)
            if rerank is not None:
                using, vector = rerank
                ids = [ev.page_id for ev in evidence]
                full = QueryNode(limit=max(len(ids), 1), using=using, vector=vector,
                                 filter=_only_pages(flt, ids))
                annotate(evidence, f"{name}_maxsim", rank_table(self.store.query(corpus, full)))


def explain_ranker(ranker: PageRanker, candidates: list[CandidatePage], rows: np.ndarray,
                   page_ids: set[str]) -> dict[str, dict[str, float]]:
    """page id -> each feature's contribution to its ranker score (and ``bias``), for ``page_ids``."""
    keep = [i for i, c in enumerate(candidates) if c.page_id in page_ids]
    if not keep:
        return {}
    contrib = ranker.contributions(rows[keep])
    return {candidates[i].page_id: {name: round(float(v), 4) for name, v in zip((*ranker.features, "bias"), row,
                                                                                strict=True)}
            for i, row in zip(keep, contrib, strict=True)}


def _only_pages(flt: FilterSpec | None, page_ids: list[str]) -> FilterSpec:
    out = FilterSpec(match=dict(flt.match) if flt else {}, ranges=dict(flt.ranges) if flt else {})
    out.match["page_id"] = page_ids
    return out


def _as_array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float32)
    return arr if arr.ndim == 2 else None
