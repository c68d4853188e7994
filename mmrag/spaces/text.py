"""Text spaces: dense MiniLM over chunks (a page is a multi-vector of its chunk embeddings,
scored by MaxSim = the best chunk's cosine) and BM25 over the page text."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import qdrant_edge as qe

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.ingest.chunking import embedded_text
from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.spaces.bm25_text import bm25_length, bm25_model, bm25_text, mean_length
from mmrag.store.base import Datatype, FilterSpec, QueryNode, SpaceSpec, SparseVec, VectorValue


class TextDenseSpace(Space):
    """MiniLM over each chunk, embedded after the header lines the corpus's ``chunk_context`` asks for
    (its document's label, its page's section path) and the header line of the table the chunk starts
    in (``IngestConfig.table_rows="chunk-header"``); the chunks themselves stay as they are."""

    name = "text"

    def __init__(self, embedder: Embedder, chunk_context: Sequence[str] = (), datatype: Datatype = "float16") -> None:
        self.embedder = embedder
        self.chunk_context = tuple(chunk_context)
        self.datatype: Datatype = datatype

    def for_corpus(self, config: CorpusConfig) -> Space:
        wanted = tuple(config.chunk_context)
        if wanted == self.chunk_context and config.text_datatype == self.datatype:
            return self
        return TextDenseSpace(self.embedder, wanted, config.text_datatype)

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("text", "multivector", self.embedder.dim, datatype=self.datatype)]

    def headers(self, page: PageInput) -> list[str]:
        """The header lines of the page's chunks, in ``chunk_context`` order."""
        return [h for h in ({"document": page.label, "section": page.context}[c] for c in self.chunk_context) if h]

    def chunk_headers(self, page: PageInput, chunk: int) -> list[str]:
        """The header lines of one chunk: the page's, then the header of the table it starts in (if any)."""
        table = page.table_headers[chunk] if chunk < len(page.table_headers) else ""
        return self.headers(page) + ([table] if table else [])

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        texts = [embedded_text(c.text, self.chunk_headers(p, i)) for p in pages for i, c in enumerate(p.chunks)]
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
    """BM25 over each page's :func:`page_bm25_text`. ``avg_len`` is the average page length in BM25's
    tokens that the stored values are normalised by; None: the average of the pages being embedded (a
    corpus's first documents, re-weighted to the corpus's average after the job: mmrag.jobs.bm25_stats)."""

    name = "bm25"

    def __init__(self, avg_len: float | None = None) -> None:
        self.avg_len = avg_len
        self.model = bm25_model(avg_len or 1.0)  # queries weigh each token 1.0 whatever the length

    def for_corpus(self, config: CorpusConfig) -> Space:
        return self if config.bm25_avg_len == self.avg_len else Bm25Space(config.bm25_avg_len)

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("bm25", "sparse", idf=True)]

    @staticmethod
    def _sparse(v: qe.SparseVector) -> SparseVec:
        return SparseVec(indices=list(v.indices), values=list(v.values))

    def text_vectors(self, texts: list[str]) -> list[SparseVec | None]:
        """The stored BM25 vector of each text (None: no tokens, the point gets no ``bm25`` vector)."""
        model = self.model
        if self.avg_len is None:
            model = bm25_model(mean_length([bm25_length(t) for t in texts]) or 1.0)
        out: list[SparseVec | None] = []
        for text in texts:
            v = model.embed_document(text) if text.strip() else None
            out.append(self._sparse(v) if v is not None and len(v.indices) else None)
        return out

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        return [{} if v is None else {"bm25": v} for v in self.text_vectors([page_bm25_text(p) for p in pages])]

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        if not query.text:
            return None
        v = self.model.embed_query(query.text)
        if not len(v.indices):
            return None
        return QueryNode(limit=limit, using="bm25", vector=self._sparse(v), filter=flt)


def page_bm25_text(p: PageInput) -> str:
    """What BM25 indexes of a page being ingested: its section line, then its text (:func:`bm25_text`)."""
    return bm25_text(p.page.indexed_text, p.context)
