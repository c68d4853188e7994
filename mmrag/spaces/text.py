"""The dense text space: MiniLM over chunks (a page is a multi-vector of its chunk embeddings,
scored by MaxSim = the best chunk's cosine). BM25 over the page text is :mod:`mmrag.spaces.bm25`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.ingest.chunking import embedded_text
from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.store.base import Datatype, FilterSpec, QueryNode, SpaceSpec, VectorValue


class TextDenseSpace(Space):
    """MiniLM over each chunk, embedded after the header lines the corpus's ``chunk_context`` asks for
    (its document's label, its page's section path) and the header line of the table the chunk starts
    in (``IngestConfig.table_rows="chunk-header"``); the chunks themselves stay as they are."""

    name = "text"
    embedder_name = "text"

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
