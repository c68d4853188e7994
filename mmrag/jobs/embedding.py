"""The embed stage's work: one page batch becomes points (vectors of every space + payload).

Kept apart from the stage plumbing (:mod:`mmrag.jobs.stages`) so that what a point holds is
decided in one place, whichever runner (embedded threads or a Celery GPU worker) calls it.
"""

from __future__ import annotations

import time
from typing import Any

from mmrag.config import CorpusConfig, IngestConfig
from mmrag.imaging import decode_image
from mmrag.ingest.chunking import chunk_page, document_label, table_headers
from mmrag.ingest.doc_evidence import metadata_evidence
from mmrag.ingest.ids import point_id
from mmrag.spaces.base import PageInput, Space
from mmrag.store.base import PointRecord, VectorValue
from mmrag.types import Document, section_line


def page_payload(doc: Document, number: int, page_id: str, section: list[str] | None = None) -> dict[str, Any]:
    """The store payload of a page: what filters and evidence read back (``section``: its section path)."""
    kind = "image" if doc.media_type.startswith("image/") else "page"  # a converted DOCX, HTML... has pages
    return {"document_id": doc.id, "filename": doc.filename, "page": number, "page_id": page_id,
            "kind": kind, "media_type": doc.media_type, "meta": doc.metadata, "section": list(section or [])}


def page_inputs(doc: Document, spaces: list[Space], config: IngestConfig) -> list[PageInput]:
    """What the spaces embed per page: its text chunks (with the header line of the table a chunk starts
    in, for ``table_rows="chunk-header"``), its section path, its document's label and evidence text
    and, if a space needs it, its image."""
    chunks = [chunk_page(p, config.chunk_words, config.chunk_overlap) for p in doc.pages]
    with_images = any(s.needs_image for s in spaces)
    evidence = metadata_evidence(doc.metadata, doc.filename) if any(s.document_level for s in spaces) else ""
    label = document_label(doc.metadata, doc.filename)
    headed = config.tables and config.table_rows == "chunk-header"
    return [PageInput(p, c, decode_image(p.image_png, max_pixels=config.max_image_pixels, what=f"page {p.number}")
                      if with_images and p.image_png else None, evidence, section_line(p.context), label,
                      table_headers(p, config.chunk_words, config.chunk_overlap) if headed else [])
            for p, c in zip(doc.pages, chunks, strict=True)]


def embed_pages(doc: Document, spaces: dict[str, Space], space_names: list[str],
                config: IngestConfig, corpus: CorpusConfig | None = None) -> list[PointRecord]:
    """Points (one per page of ``doc``, vectors of every requested space); ``doc`` may hold a page batch.
    ``corpus`` applies per-corpus options (pooling factor, quantisation, BM25 length) to the spaces."""
    active = [spaces[n] if corpus is None else spaces[n].for_corpus(corpus) for n in space_names if n in spaces]
    inputs = page_inputs(doc, active, config)
    vectors: list[dict[str, VectorValue]] = [{} for _ in doc.pages]
    for space in active:
        t0 = time.perf_counter()
        for i, v in enumerate(space.page_vectors(inputs)):
            vectors[i].update(v)
        doc.timings[f"embed_{space.name}"] = time.perf_counter() - t0
    return [PointRecord(id=point_id(p.id), vectors=vectors[i], payload=page_payload(doc, p.number, p.id, p.context))
            for i, p in enumerate(doc.pages)]
