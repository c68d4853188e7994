"""Split a page's words into overlapping windows (the units of the dense text space), and the
header lines a window may be embedded with (its document's label, its page's section path)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.doc_periods import spoken_period
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


def table_headers(page: Page, size: int, overlap: int) -> list[str]:
    """For each chunk of :func:`chunk_page` (same spans), the header line of the table it starts inside
    of, past that header (its rows would be embedded without their column labels); "" for the others."""
    out = []
    for start, _ in chunk_spans(len(page.words), size, overlap):
        inside = [t.header for t in page.tables if t.start < start < t.end and t.header]
        out.append(inside[0] if inside else "")
    return out


def document_label(metadata: Mapping[str, Any], filename: str) -> str:
    """A document's short label from its facts (``metadata["doc"]``, set at ingestion): title · main
    entity · main period (``Form 10-Q · Apple Inc. · June 25, 2022``); the file name when it has no title."""
    raw = metadata.get("doc")
    facts = DocumentFacts.from_dict(raw if isinstance(raw, dict) else None)
    parts = [facts.title or filename, facts.entities[0] if facts.entities else "",
             spoken_period(facts.periods[0]) if facts.periods else ""]
    kept: list[str] = []
    for part in (" ".join(p.split()) for p in parts):
        if part and not any(_letters(part) in _letters(k) for k in kept):  # "Apple Inc" after "Apple Inc."
            kept.append(part)
    return " · ".join(kept)


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def embedded_text(text: str, headers: Sequence[str]) -> str:
    """What the dense text space embeds of a chunk: its header lines, then its text."""
    return "\n".join([*headers, text]) if headers else text
