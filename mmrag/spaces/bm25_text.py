"""What BM25 indexes of a page, and how long that is in BM25's own tokens.

Qdrant's BM25 (``qdrant_edge.Bm25``, the same code as the server's ``qdrant/bm25`` model) stores
``tf * (k + 1) / (tf + k * (1 - b + b * dl / avg_len))`` per token at indexing time; the engine
multiplies in the IDF at query time (``Modifier.Idf``). ``dl`` is the number of tokens after its
tokenizer: lowercased words, English stopwords removed, stemmed — not words. :func:`bm25_length`
counts exactly those, so a corpus's average (:mod:`mmrag.jobs.bm25_stats`) is in the same unit.
"""

from __future__ import annotations

from functools import lru_cache

import qdrant_edge as qe

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
    Ingestion (:class:`mmrag.spaces.text.Bm25Space`) and re-weighting use this one function."""
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
