"""Pages of a PDF or an image upload: text layer or OCR, render (the parse stage's work, :mod:`mmrag.jobs.pages`)."""

from __future__ import annotations

import hashlib
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pymupdf
from PIL import Image

from mmrag.config import IngestConfig
from mmrag.imaging import decode_image, encode_png
from mmrag.ingest import pdf
from mmrag.ingest.figure_text import figure_words
from mmrag.ingest.ids import page_id
from mmrag.ingest.ocr import detect_rotation, ocr_image, upright
from mmrag.ingest.page_context import LOOKBACK_PAGES, SectionState, section_paths
from mmrag.ingest.pdf_budget import check_pages
from mmrag.page_render import render_image
from mmrag.types import Page, TextSource, Word

SUSPECT_ALNUM = 0.75  # a text layer whose words are less than this share letters and digits is looked at closer
UNREADABLE_SHARE = 0.05  # ... and is unreadable when this share of its raw characters are control codes


def unreadable(words: list[Word], layer_text: Callable[[], str]) -> bool:
    """A text layer whose fonts map glyphs to control codes, not characters (the page shows "McDonald's",
    the layer holds ``\x01\x02\x03...``; its words keep only the punctuation between them): its words
    are mostly not letters or digits (under :data:`SUSPECT_ALNUM`; real pages are 0.86 and up) and more
    than :data:`UNREADABLE_SHARE` of the page's raw text (``layer_text``, read only then) is control
    characters, which real text has only as whitespace."""
    chars = "".join(w.text for w in words)
    if not chars or sum(c.isalnum() for c in chars) >= SUSPECT_ALNUM * len(chars):
        return False
    raw = "".join(layer_text().split())
    return sum(1 for c in raw if unicodedata.category(c) == "Cc") > UNREADABLE_SHARE * len(raw)


def needs_ocr(words: list[Word], min_chars: int, has_marks: Callable[[], bool],
              layer_text: Callable[[], str]) -> bool:
    """OCR a page whose text layer is unreadable (:func:`unreadable`: its glyphs are what OCR reads), or
    too short (``min_chars``) on a page that shows an image or a drawing (``has_marks``); a blank page is not."""
    if sum(len(w.text.strip()) for w in words) < min_chars:
        return has_marks()
    return unreadable(words, layer_text)


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


def layer_or_ocr_words(doc: pymupdf.Document, number: int, config: IngestConfig, ocr: bool) -> list[Word]:
    """Page ``number``'s words for reading its document's evidence: the text layer's, or (``ocr`` and
    ``config.ocr``) OCR's where the layer is unreadable (:func:`unreadable`; else none)."""
    words = pdf.page_words(doc[number - 1])
    if not unreadable(words, partial(pdf.layer_text, doc, number)):
        return words
    return _ocr(pdf.render_for_ocr(doc, number, config), config, {})[0] if ocr and config.ocr else []


def _ocr(image: Image.Image, config: IngestConfig, timings: dict[str, float]) -> tuple[list[Word], int]:
    """OCR words of the upright page and the clockwise rotation that made it upright."""
    t0 = time.perf_counter()
    rotation = detect_rotation(image)
    words = ocr_image(upright(image, rotation), languages=config.ocr_languages)
    timings["ocr"] = time.perf_counter() - t0
    return words, rotation


@dataclass(frozen=True, slots=True)
class ParseResult:
    """A batch's pages and where its section reading stopped."""

    pages: list[Page]
    sections: SectionState | None  # where the section reading stood after the last page (the next batch's start)


def parse_pdf_batch(data: bytes, doc_id: str, config: IngestConfig, first: int = 1, last: int | None = None,
                    images: bool = True, on_page: Callable[[int], None] | None = None,
                    carried: SectionState | None = None) -> ParseResult:
    """Pages ``first..last`` (1-based, inclusive; default all): text layer, OCR when unusable (else, with
    ``config.figure_ocr``, OCR of the pictures the layer has no words in: :mod:`mmrag.ingest.figure_text`), and (if
    ``images``) the render; each with its context (section path, the header of a table it continues:
    :mod:`mmrag.ingest.page_context`). OCRed pages are always rendered (their image is the text's source);
    a page with neither images nor vector drawings is not OCRed (nothing there to read: a blank page).
    Pages that would draw too much are refused first (:func:`~mmrag.ingest.pdf_budget.check_pages`);
    ``on_page`` is told each page's number as its work starts (the parse worker's page clock); ``carried``:
    the section reading an earlier batch of the file left (:func:`~mmrag.ingest.page_context.section_paths`)."""
    doc = pdf.open_pdf(data, config)
    try:
        last = last or doc.page_count
        check_pages(doc, first - LOOKBACK_PAGES, last, config)  # section paths read a few pages before
        pages = []
        t0 = time.perf_counter()
        sections, state = section_paths(doc, first, last, carried)
        sections_s = time.perf_counter() - t0
        for rendered in pdf.render_pages(doc, config, first, last, images, on_page):
            words, source, image = rendered.words, TextSource.LAYER, rendered.image
            if config.ocr and needs_ocr(words, config.min_text_chars, partial(pdf.has_marks, doc, rendered.number),
                                        partial(pdf.layer_text, doc, rendered.number)):
                if image is None:
                    image = render_image(doc.load_page(rendered.number - 1), config.dpi, config.max_page_pixels)
                hi_res = pdf.render_for_ocr(doc, rendered.number, config)
                words, rotation = _ocr(hi_res, config, rendered.timings)
                source, image = TextSource.OCR, upright(image, rotation)
            elif config.ocr and config.figure_ocr:
                pictured = figure_words(doc.load_page(rendered.number - 1), words,
                                        min_area=config.figure_ocr_min_area,
                                        max_regions=config.figure_ocr_max_regions, dpi=config.ocr_dpi,
                                        max_pixels=config.max_page_pixels, languages=config.ocr_languages,
                                        timings=rendered.timings)
                words = words + pictured  # after the layer's: its tables' spans keep their indexes
                if pictured and rendered.labelled is not None:
                    rendered.labelled = rendered.labelled + [w.text for w in pictured]
            page = _page(doc_id, rendered.number, image, words, source, rendered.timings, rendered.size)
            page.context, page.table_header = sections.get(rendered.number, []), rendered.continued
            page.tables = rendered.tables if source is TextSource.LAYER else []
            if source is TextSource.LAYER and rendered.labelled is not None:
                page.bm25_text = " ".join(rendered.labelled)
            page.timings["sections"] = sections_s / len(sections) if sections else 0.0
            pages.append(page)
        return ParseResult(pages, state)
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
