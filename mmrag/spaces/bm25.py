"""The BM25 space (:class:`Bm25Space`): what BM25 indexes of a page, and how long that is in BM25's own tokens.

Qdrant's BM25 (``qdrant_edge.Bm25``, the same code as the server's ``qdrant/bm25`` model) stores
``tf * (k + 1) / (tf + k * (1 - b + b * dl / avg_len))`` per token at indexing time; the engine
multiplies in the IDF at query time (``Modifier.Idf``). ``dl`` is the number of tokens after its
tokenizer: lowercased words, English stopwords removed, stemmed — not words. :func:`bm25_length`
counts exactly those, so a corpus's average (:mod:`mmrag.jobs.bm25_stats`) is in the same unit.
"""

from __future__ import annotations

from functools import lru_cache

import qdrant_edge as qe

from mmrag.config import CorpusConfig
from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.store.base import FilterSpec, QueryNode, SpaceSpec, SparseVec, VectorValue

LANGUAGE = "english"
_COUNT_K = 1e6  # with b = 0 a token's value is c * (k + 1) / (k + c): ~c, invertible exactly


def bm25_model(avg_len: float) -> qe.Bm25:
    """The one BM25 configuration of page text (document and query side share the tokenizer)."""
    return qe.Bm25(qe.Bm25Config(avg_len=avg_len, language=LANGUAGE))


@lru_cache(maxsize=1)
def _counter() -> qe.Bm25:
    return qe.Bm25(qe.Bm25Config(k=_COUNT_K, b=0.0, language=LANGUAGE))


def bm25_text(text: str, context: str = "") -> str:
    """The text BM25 indexes of a page: its section context (headings) first, then its text.
    Ingestion (:class:`Bm25Space`) and re-weighting use this one function."""
    return f"{context}\n{text}" if context.strip() else text


def bm25_term_counts(text: str) -> dict[int, int]:
    """How often each BM25 token (by its index in the sparse vectors) occurs in ``text``."""
    if not text.strip():
        return {}
    v = _counter().embed_document(text)
    return {i: round(x * _COUNT_K / (_COUNT_K + 1.0 - x)) for i, x in zip(v.indices, v.values, strict=True)}


def bm25_length(text: str) -> int:
    """``dl`` of ``text`` as Qdrant's BM25 counts it (tokens after stopwords and stemming)."""
    return sum(bm25_term_counts(text).values())


def mean_length(lengths: list[int]) -> float | None:
    """Average ``dl`` over the texts that have tokens (the points that get a BM25 vector)."""
    used = [n for n in lengths if n > 0]
    return sum(used) / len(used) if used else None


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
