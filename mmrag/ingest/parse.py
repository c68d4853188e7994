"""Bytes to :class:`Document`: sniff the type, check limits, render, read text, OCR."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from PIL import Image

from mmrag.config import IngestConfig
from mmrag.errors import InvalidInput, TooLarge
from mmrag.ingest import pdf
from mmrag.ingest.ids import document_id, page_id
from mmrag.ingest.images import decode_image, encode_png
from mmrag.ingest.ocr import detect_rotation, ocr_image, upright
from mmrag.ingest.page_context import section_paths
from mmrag.ingest.sniff import KINDS
from mmrag.types import Document, Page, TextSource, Word

IMAGE_KINDS = frozenset(k for k, v in KINDS.items() if v.family == "image")


def _usable(words: list[Word], min_chars: int) -> bool:
    return sum(len(w.text.strip()) for w in words) >= min_chars


def _page(doc_id: str, number: int, image: Image.Image | None, words: list[Word], source: TextSource,
          timings: dict[str, float], size: tuple[int, int] | None = None) -> Page:
    """A page; without ``image`` (not rendered at ingest: no space needs its pixels) it has no PNG and an
    empty ``image_hash``, and ``size`` is the pixel size its render has (rendered on demand)."""
    png = None
    if image is not None:
        t0 = time.perf_counter()
        png = encode_png(image)
        timings["encode_png"] = time.perf_counter() - t0
        size = image.size
    width, height = size or (0, 0)
    return Page(
        id=page_id(doc_id, number), document_id=doc_id, number=number, width=width, height=height,
        image_hash=hashlib.sha256(png).hexdigest() if png is not None else "",
        text=" ".join(w.text for w in words), words=words,
        text_source=source if words else TextSource.NONE, image_png=png, timings=timings,
    )


def _ocr(image: Image.Image, config: IngestConfig, timings: dict[str, float]) -> tuple[list[Word], int]:
    """OCR words of the upright page and the clockwise rotation that made it upright."""
    t0 = time.perf_counter()
    rotation = detect_rotation(image)
    words = ocr_image(upright(image, rotation), languages=config.ocr_languages)
    timings["ocr"] = time.perf_counter() - t0
    return words, rotation


def parse_pdf(data: bytes, doc_id: str, config: IngestConfig, first: int = 1, last: int | None = None,
              images: bool = True) -> list[Page]:
    """Pages ``first..last`` (1-based, inclusive; default all): text layer, OCR when unusable, and (if
    ``images``) the render; each with its context (section path, the header of a table it continues:
    :mod:`mmrag.ingest.page_context`). OCRed pages are always rendered (their image is the text's source);
    a page with neither images nor vector drawings is not OCRed (nothing there to read: a blank page)."""
    doc = pdf.open_pdf(data, config)
    try:
        pages = []
        t0 = time.perf_counter()
        sections = section_paths(doc, first, last or doc.page_count)
        sections_s = time.perf_counter() - t0
        for rendered in pdf.render_pages(doc, config, first, last, images):
            words, source, image = rendered.words, TextSource.LAYER, rendered.image
            if not _usable(words, config.min_text_chars) and config.ocr and pdf.has_marks(doc, rendered.number):
                if image is None:
                    image = pdf.render_image(doc.load_page(rendered.number - 1), config)
                hi_res = pdf.render_for_ocr(doc, rendered.number, config)
                words, rotation = _ocr(hi_res, config, rendered.timings)
                source, image = TextSource.OCR, upright(image, rotation)
            page = _page(doc_id, rendered.number, image, words, source, rendered.timings, rendered.size)
            page.context, page.table_header = sections.get(rendered.number, []), rendered.continued
            page.tables = rendered.tables if source is TextSource.LAYER else []
            page.timings["sections"] = sections_s / len(sections) if sections else 0.0
            pages.append(page)
        return pages
    finally:
        doc.close()


def parse_image(data: bytes, doc_id: str, filename: str, config: IngestConfig) -> list[Page]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    image = decode_image(data, max_pixels=config.max_image_pixels, what=filename or "image")
    timings["decode"] = time.perf_counter() - t0
    words: list[Word] = []
    if config.ocr:
        words, rotation = _ocr(image, config, timings)
        image = upright(image, rotation)
    source = TextSource.OCR if words else TextSource.NONE
    if image.width * image.height > config.max_page_pixels:  # keep stored pages under the page cap
        scale = (config.max_page_pixels / (image.width * image.height)) ** 0.5
        image = image.resize((max(1, int(image.width * scale)), max(1, int(image.height * scale))))
    return [_page(doc_id, 1, image, words, source, timings)]


def parse_document(data: bytes, filename: str, config: IngestConfig,
                   metadata: dict[str, Any] | None = None) -> Document:
    """Validate and parse one upload. Raises InvalidInput subclasses for bad files."""
    name = filename or "upload"
    if len(data) == 0:
        raise InvalidInput(f"{name} is empty (0 bytes); upload a PDF or an image")
    if len(data) > config.max_upload_bytes:
        raise TooLarge(f"{name} is {len(data):,} bytes; the limit is {config.max_upload_bytes:,} "
                       "(MMRAG_INGEST__MAX_UPLOAD_BYTES)")
    from mmrag.ingest.source import prepare_source  # source -> convert -> worker -> parse: import late
    t0 = time.perf_counter()
    source = prepare_source(data, name, config)
    doc_id = document_id(data)
    if source.kind in IMAGE_KINDS:
        pages = parse_image(data, doc_id, name, config)
    else:
        pages = parse_pdf(source.pdf or data, doc_id, config)
    return Document(
        id=doc_id, filename=name, media_type=source.media_type, size_bytes=len(data), pages=pages,
        metadata={**(metadata or {}), "doc": source.facts.as_dict()}, timings={"parse": time.perf_counter() - t0},
    )
