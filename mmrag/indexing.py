"""Indexing stages: parse (CPU) -> embed (GPU/embedding service) -> write (the store owner).

Each stage takes plain data and is idempotent: ids come from content hashes and writes
are upserts, so a stage can be retried or re-run after a crash without duplicates.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass
from typing import Any

from PIL import Image

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig, IngestConfig
from mmrag.ingest import parse_document
from mmrag.ingest.chunking import chunk_page
from mmrag.ingest.ids import document_id, point_id
from mmrag.spaces.base import PageInput, Space
from mmrag.store.base import FilterSpec, PointRecord, VectorStore, VectorValue
from mmrag.types import Document, DocumentInfo

log = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestOutcome:
    document: DocumentInfo
    created: bool  # False: the same bytes were already indexed (nothing redone)
    timings: dict[str, float]


def page_payload(doc: Document, number: int, page_id: str) -> dict[str, Any]:
    kind = "page" if doc.media_type == "application/pdf" else "image"
    return {"document_id": doc.id, "filename": doc.filename, "page": number, "page_id": page_id,
            "kind": kind, "media_type": doc.media_type, "meta": doc.metadata}


def embed_pages(doc: Document, spaces: dict[str, Space], space_names: list[str],
                config: IngestConfig, corpus: CorpusConfig | None = None) -> list[PointRecord]:
    """Points (one per page of ``doc``, vectors of every requested space); ``doc`` may hold a page batch.
    ``corpus`` applies per-corpus options (pooling factor, quantisation, BM25 length) to the spaces."""
    chunks = [chunk_page(p, config.chunk_words, config.chunk_overlap) for p in doc.pages]
    active = [spaces[n] if corpus is None else spaces[n].for_corpus(corpus) for n in space_names if n in spaces]
    images = None
    if any(s.needs_image for s in active):
        images = [Image.open(io.BytesIO(p.image_png)).convert("RGB") if p.image_png else None for p in doc.pages]
    inputs = [PageInput(p, c, images[i] if images else None)
              for i, (p, c) in enumerate(zip(doc.pages, chunks, strict=True))]
    vectors: list[dict[str, VectorValue]] = [{} for _ in doc.pages]
    for space in active:
        t0 = time.perf_counter()
        for i, v in enumerate(space.page_vectors(inputs)):
            vectors[i].update(v)
        doc.timings[f"embed_{space.name}"] = time.perf_counter() - t0
    return [PointRecord(id=point_id(p.id), vectors=vectors[i], payload=page_payload(doc, p.number, p.id))
            for i, p in enumerate(doc.pages)]


class Indexer:
    """Lifecycle: built once by the composition root; thread-safe if its store and catalog are."""

    def __init__(self, catalog: Catalog, store: VectorStore, spaces: dict[str, Space], config: IngestConfig):
        self.catalog, self.store, self.spaces, self.config = catalog, store, spaces, config

    def parse(self, data: bytes, filename: str, metadata: dict[str, Any] | None = None) -> Document:
        return parse_document(data, filename, self.config, metadata)

    def embed(self, doc: Document, corpus: CorpusConfig) -> list[PointRecord]:
        """Vectors of every page in every space of the corpus, as points."""
        return embed_pages(doc, self.spaces, corpus.spaces, self.config, corpus)

    def write(self, corpus: str, doc: Document, points: list[PointRecord]) -> DocumentInfo:
        """Page images, then vectors, then the catalog row (a listed document is complete)."""
        t0 = time.perf_counter()
        self.catalog.save_page_images(corpus, doc.pages)
        self.store.upsert(corpus, points)
        info = self.catalog.add_document(corpus, doc)
        doc.timings["write"] = time.perf_counter() - t0
        return info

    def ingest(self, corpus: str, data: bytes, filename: str, metadata: dict[str, Any] | None = None) -> IngestOutcome:
        """All three stages in this thread. Re-uploading the same bytes returns the stored document."""
        corpus_config = self.catalog.corpus_config(corpus)

        existing = self.catalog.find_document(corpus, document_id(data)) if data else None
        if existing is not None:
            return IngestOutcome(existing, created=False, timings={})
        t0 = time.perf_counter()
        doc = self.parse(data, filename, metadata)
        points = self.embed(doc, corpus_config)
        info = self.write(corpus, doc, points)
        doc.timings["total"] = time.perf_counter() - t0
        log.info("indexed %s (%d pages) into %s in %.2fs", filename, len(doc.pages), corpus, doc.timings["total"])
        return IngestOutcome(info, created=True, timings=dict(doc.timings))

    def delete_document(self, corpus: str, doc_id: str) -> None:
        """Vectors first, then the catalog (a crash in between leaves a listed document to delete again)."""
        self.catalog.document(corpus, doc_id)
        self.store.delete(corpus, FilterSpec(match={"document_id": doc_id}))
        self.catalog.delete_document(corpus, doc_id)
