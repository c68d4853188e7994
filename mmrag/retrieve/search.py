"""The retriever: validate a request, build one multi-stage plan, run it, hydrate evidence.

Plan: every space the request uses contributes a prefetch stage; several stages are fused
with (weighted) RRF; a space that reranks (ColPali full multi-vectors) rescoring the fused
candidates by MaxSim. All of it is one Qdrant query, on either store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig, IngestConfig, RetrieveConfig
from mmrag.errors import InvalidInput
from mmrag.ingest.images import decode_image
from mmrag.retrieve.snippets import snippet
from mmrag.spaces.base import QueryInput, Space
from mmrag.store.base import FilterSpec, Hit, QueryNode, VectorStore
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult

TIE_MARGIN = 8  # extra candidates fetched so that ties at the cut-off are broken the same way everywhere


def request_filter(request: SearchRequest) -> FilterSpec | None:
    flt = FilterSpec()
    if request.document_ids:
        flt.match["document_id"] = list(request.document_ids)
    for key, value in request.metadata.items():
        flt.match[f"meta.{key}"] = value
    return None if flt.empty() else flt


class Retriever:
    """Lifecycle: built once by the composition root; ``search`` is thread-safe."""

    def __init__(self, catalog: Catalog, store: VectorStore, spaces: Mapping[str, Space],
                 config: RetrieveConfig, ingest: IngestConfig) -> None:
        self.catalog, self.store, self.spaces, self.config, self.ingest = catalog, store, spaces, config, ingest

    def validate(self, corpus_config: CorpusConfig, request: SearchRequest) -> list[str]:
        """Check bounds and options; return the spaces to use."""
        if not request.query.strip() and request.image is None:
            raise InvalidInput("empty query: give a text query, an image, or both")
        if len(request.query) > self.config.max_query_chars:
            raise InvalidInput(f"query is {len(request.query)} characters; the limit is {self.config.max_query_chars}")
        if not 1 <= request.top_k <= self.config.max_top_k:
            raise InvalidInput(f"top_k must be between 1 and {self.config.max_top_k}, got {request.top_k}")
        available = [s for s in corpus_config.spaces if s in self.spaces]
        wanted = request.spaces if request.spaces is not None else available
        unknown = [s for s in wanted if s not in available]
        if unknown or not wanted:
            raise InvalidInput(f"spaces {unknown or wanted} not available for this corpus; it has: {available}")
        for name, weight in (request.weights or {}).items():
            if name not in wanted:
                raise InvalidInput(f"weight given for space {name!r}, which the request does not use ({wanted})")
            if not 0 <= weight <= 100:
                raise InvalidInput(f"weight of {name!r} must be between 0 and 100, got {weight}")
        return list(wanted)

    def _query_input(self, request: SearchRequest) -> QueryInput:
        image = None
        if request.image is not None:
            image = decode_image(request.image, max_pixels=self.ingest.max_image_pixels, what="query image")
        return QueryInput(text=request.query.strip(), image=image)

    def plan(self, query: QueryInput, names: list[str], request: SearchRequest) -> QueryNode:
        flt = request_filter(request)
        stages: list[tuple[str, QueryNode]] = []
        for name in names:
            space = self.spaces[name]
            if (query.text and space.takes_text_query) or (query.image is not None and space.takes_image_query):
                node = space.prefetch(query, self.config.prefetch_limit, flt)
                if node is not None:
                    stages.append((name, node))
        if not stages:
            raise InvalidInput(f"none of the spaces {names} can use this query (text spaces need words, "
                               "image queries need clip or colpali)")
        rerank = next((r for n in names if (r := self.spaces[n].rerank(query)) is not None), None)
        if len(stages) == 1 and rerank is None:
            node = stages[0][1]
            node.limit = request.top_k
            return node
        weights = [float((request.weights or {}).get(n, 1.0)) for n, _ in stages]
        fused = QueryNode(limit=self.config.prefetch_limit if rerank else request.top_k,
                          prefetch=[n for _, n in stages], fusion="rrf", rrf_k=self.config.rrf_k,
                          weights=weights if any(w != 1.0 for w in weights) else None)
        if rerank is None:
            return fused
        using, vector = rerank
        return QueryNode(limit=request.top_k, using=using, vector=vector, prefetch=[fused], filter=flt)

    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        t0 = time.perf_counter()
        names = self.validate(self.catalog.corpus_config(corpus), request)
        query = self._query_input(request)
        node = self.plan(query, names, request)
        t1 = time.perf_counter()
        with_vectors = ["text"] if "text" in names and query.text else None
        node.limit += TIE_MARGIN
        hits = self.store.query(corpus, node, with_vectors=with_vectors)
        # engines order equal scores differently: break ties by page id so results are reproducible
        hits = sorted(hits, key=lambda h: (-round(h.score, 6), h.payload.get("page_id", h.id)))[: request.top_k]
        t2 = time.perf_counter()
        evidence = self.hydrate(corpus, hits, query, request)
        if request.explain:
            self.explain(corpus, evidence, query, names, request)
        t3 = time.perf_counter()
        return SearchResult(evidence=evidence, timings={"plan": t1 - t0, "query": t2 - t1, "hydrate": t3 - t2,
                                                        "total": t3 - t0})

    def hydrate(self, corpus: str, hits: list[Hit], query: QueryInput, request: SearchRequest) -> list[Evidence]:
        words = self.catalog.page_words(corpus, [h.payload["page_id"] for h in hits])
        qvec = query.cache.get("text")
        out = []
        for hit in hits:
            p = hit.payload
            chunk_vectors = _as_array(hit.vectors.get("text"))
            text, boxes = snippet(words.get(p["page_id"], []), query.text, self.ingest.chunk_words,
                                  self.ingest.chunk_overlap, chunk_vectors,
                                  qvec[0] if isinstance(qvec, np.ndarray) else None)
            out.append(Evidence(
                kind=EvidenceKind(p.get("kind", "page")), corpus=corpus, document_id=p["document_id"],
                filename=p["filename"], page_id=p["page_id"], page=int(p["page"]), score=hit.score,
                snippet=text, boxes=boxes, metadata=dict(p.get("meta") or {}),
            ))
        return out

    def explain(self, corpus: str, evidence: list[Evidence], query: QueryInput, names: list[str],
                request: SearchRequest) -> None:
        """Fill per-space ranks and scores by running each space's stage alone."""
        flt = request_filter(request)
        for name in names:
            node = self.spaces[name].prefetch(query, self.config.prefetch_limit, flt)
            if node is None:
                continue
            ranked = {h.payload["page_id"]: (i + 1, h.score) for i, h in enumerate(self.store.query(corpus, node))}
            for ev in evidence:
                if ev.page_id in ranked:
                    ev.ranks[name], ev.scores[name] = ranked[ev.page_id]


def _as_array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float32)
    return arr if arr.ndim == 2 else None
