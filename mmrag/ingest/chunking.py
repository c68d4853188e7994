"""Split a page's words into overlapping windows (the units of the dense text space)."""

from __future__ import annotations

from mmrag.ingest.ids import sha256_hex
from mmrag.types import Chunk, Page


def chunk_spans(n_words: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """[start, end) word ranges of windows of ``size`` words overlapping by ``overlap``."""
    if n_words == 0:
        return []
    step = max(1, size - min(overlap, size - 1))
    spans = []
    start = 0
    while True:
        end = min(start + size, n_words)
        spans.append((start, end))
        if end >= n_words:
            return spans
        start += step


def chunk_page(page: Page, size: int, overlap: int) -> list[Chunk]:
    chunks = []
    for i, (start, end) in enumerate(chunk_spans(len(page.words), size, overlap)):
        words = page.words[start:end]
        chunks.append(Chunk(
            id=sha256_hex(f"{page.id}:{i}".encode())[:32], page_id=page.id, document_id=page.document_id,
            page_number=page.number, index=i, text=" ".join(w.text for w in words),
            boxes=[w.bbox for w in words],
        ))
    return chunks
