"""Choosing the snippet of a retrieved page: the best chunk, narrowed to a window of words."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from mmrag.ingest.chunking import chunk_spans
from mmrag.types import BBox, Word

_TOKEN = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text) if len(t) > 1}


def best_window(words: Sequence[Word], start: int, end: int, terms: set[str], width: int) -> tuple[int, int]:
    """The ``width``-word window of words[start:end] with the most query-term hits (first on ties)."""
    if end - start <= width:
        return start, end
    hits = [1 if w.text.lower().strip(".,;:()[]\"'") in terms else 0 for w in words[start:end]]
    best, best_at, current = -1, start, sum(hits[:width])
    for i in range(0, end - start - width + 1):
        if i:
            current += hits[i + width - 1] - hits[i - 1]
        if current > best:
            best, best_at = current, start + i
    return best_at, best_at + width


def snippet(words: Sequence[Word], query: str, chunk_size: int, overlap: int,
            chunk_vectors: np.ndarray | None, query_vector: np.ndarray | None,
            width: int = 40) -> tuple[str, list[BBox]]:
    """Text and word boxes of the part of the page that best matches the query.

    chunk_vectors: (n_chunks, dim) of the page, query_vector: (dim,). Without them the
    chunk with the most query-term hits wins.
    """
    spans = chunk_spans(len(words), chunk_size, overlap)
    if not spans:
        return "", []
    terms = query_terms(query)
    if chunk_vectors is not None and query_vector is not None and len(chunk_vectors) == len(spans):
        index = int(np.argmax(chunk_vectors @ query_vector))
    else:
        counts = [sum(w.text.lower() in terms for w in words[s:e]) for s, e in spans]
        index = int(np.argmax(counts))
    s, e = best_window(words, *spans[index], terms, width)
    return " ".join(w.text for w in words[s:e]), [w.bbox for w in words[s:e]]
