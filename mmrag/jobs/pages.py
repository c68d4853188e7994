"""Parse a range of pages of an upload: the CPU stage's unit of work (a page batch)."""

from __future__ import annotations

from dataclasses import replace

from mmrag.config import IngestConfig
from mmrag.ingest.parse import parse_image, parse_pdf, sniff_media_type
from mmrag.types import Page


def parse_pages(data: bytes, doc_id: str, filename: str, config: IngestConfig,
                first: int, last: int) -> tuple[str, list[Page]]:
    """(media type, pages ``first..last`` (1-based, inclusive)), rendered, with text layer or OCR."""
    media_type = sniff_media_type(data, filename)
    if media_type != "application/pdf":
        return media_type, parse_image(data, doc_id, filename, config)
    return media_type, parse_pdf(data, doc_id, config, first, last)


def split_images(pages: list[Page]) -> tuple[list[Page], list[bytes | None]]:
    """Pages without their PNGs (small, for the catalog) and the PNGs (for the page store and embedders)."""
    return [replace(p, image_png=None) for p in pages], [p.image_png for p in pages]
