"""Text spaces: dense MiniLM over chunks (a page is a multi-vector of its chunk embeddings,
scored by MaxSim = the best chunk's cosine) and BM25 over the page text."""

from __future__ import annotations

import numpy as np
import qdrant_edge as qe

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.store.base import FilterSpec, QueryNode, SpaceSpec, SparseVec, VectorValue


class TextDenseSpace(Space):
    name = "text"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("text", "multivector", self.embedder.dim)]

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        texts = [c.text for p in pages for c in p.chunks]
        vectors = self.embedder.embed_many(texts, "document") if texts else []
        out: list[dict[str, VectorValue]] = []
        i = 0
        for p in pages:
            n = len(p.chunks)
            out.append({"text": np.stack(vectors[i:i + n])} if n else {})  # (n_chunks, dim)
            i += n
        return out

    def query_vector(self, query: QueryInput) -> np.ndarray | None:
        if not query.text:
            return None
        if "text" not in query.cache:
            query.cache["text"] = self.embedder.embed(query.text, "query")[None, :]  # (1, dim)
        vec = query.cache["text"]
        assert isinstance(vec, np.ndarray)
        return vec

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        vec = self.query_vector(query)
        return None if vec is None else QueryNode(limit=limit, using="text", vector=vec, filter=flt)


class Bm25Space(Space):
    name = "bm25"

    def __init__(self, avg_len: float = 300.0) -> None:
        self.avg_len = avg_len
        self.model = qe.Bm25(qe.Bm25Config(avg_len=avg_len, language="english"))

    def for_corpus(self, config: CorpusConfig) -> Space:
        return self if config.bm25_avg_len == self.avg_len else Bm25Space(config.bm25_avg_len)

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("bm25", "sparse", idf=True)]

    @staticmethod
    def _sparse(v: qe.SparseVector) -> SparseVec:
        return SparseVec(indices=list(v.indices), values=list(v.values))

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        out: list[dict[str, VectorValue]] = []
        for p in pages:
            v = self.model.embed_document(p.page.text) if p.page.text.strip() else None
            out.append({"bm25": self._sparse(v)} if v is not None and len(v.indices) else {})
        return out

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        if not query.text:
            return None
        v = self.model.embed_query(query.text)
        if not len(v.indices):
            return None
        return QueryNode(limit=limit, using="bm25", vector=self._sparse(v), filter=flt)
