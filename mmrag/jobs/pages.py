"""Parse a range of pages of an upload: the CPU stage's unit of work (a page batch)."""

from __future__ import annotations

import time
from dataclasses import replace

import pymupdf

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument
from mmrag.ingest import pdf
from mmrag.ingest.parse import _ocr, _page, _usable, parse_image, sniff_media_type
from mmrag.types import Page, TextSource


def count_pages(data: bytes, filename: str, config: IngestConfig) -> tuple[str, int]:
    """(media type, pages) after the cheap checks: type sniffing, PDF open/encryption/page limit."""
    media_type = sniff_media_type(data, filename)
    if media_type != "application/pdf":
        return media_type, 1
    doc = pdf.open_pdf(data, config)
    try:
        return media_type, int(doc.page_count)
    finally:
        doc.close()


def _render_page(doc: pymupdf.Document, number: int, config: IngestConfig) -> pdf.RenderedPage:
    """Page ``number`` (1-based) as :func:`mmrag.ingest.pdf.render_pages` renders it."""
    t0 = time.perf_counter()
    try:
        page = doc.load_page(number - 1)
        words = pdf.page_words(page)
        t1 = time.perf_counter()
        zoom = pdf.render_zoom(page.rect.width, page.rect.height, config.dpi, config.max_page_pixels)
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace=pymupdf.csRGB)
        from PIL import Image

        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    except Exception as exc:
        raise CorruptDocument(f"page {number} of the PDF cannot be rendered ({exc})") from exc
    return pdf.RenderedPage(number, image, words, {"text_layer": t1 - t0, "render": time.perf_counter() - t1})


def parse_pages(data: bytes, doc_id: str, filename: str, config: IngestConfig,
                first: int, last: int) -> tuple[str, list[Page]]:
    """(media type, pages ``first..last`` (1-based, inclusive)), rendered, with text layer or OCR."""
    media_type = sniff_media_type(data, filename)
    if media_type != "application/pdf":
        return media_type, parse_image(data, doc_id, filename, config)
    doc = pdf.open_pdf(data, config)
    try:
        pages = []
        for number in range(first, last + 1):
            rendered = _render_page(doc, number, config)
            words, source, image = rendered.words, TextSource.LAYER, rendered.image
            if not _usable(words, config.min_text_chars) and config.ocr:
                from mmrag.ingest.ocr import upright

                hi_res = pdf.render_for_ocr(doc, number, config)
                words, rotation = _ocr(hi_res, config, rendered.timings)
                source, image = TextSource.OCR, upright(image, rotation)
            pages.append(_page(doc_id, number, image, words, source, rendered.timings))
        return media_type, pages
    finally:
        doc.close()


def split_images(pages: list[Page]) -> tuple[list[Page], list[bytes | None]]:
    """Pages without their PNGs (small, for the catalog) and the PNGs (for the page store and embedders)."""
    return [replace(p, image_png=None) for p in pages], [p.image_png for p in pages]
