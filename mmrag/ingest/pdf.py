"""PDF pages with PyMuPDF: render at a DPI under a pixel cap, text layer with word boxes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pymupdf
from PIL import Image

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, TooLarge
from mmrag.ingest.table_grid import RawWord
from mmrag.ingest.tables import read_tables
from mmrag.page_render import pixmap_matrix, render_image, render_zoom
from mmrag.types import TableSpan, Word


@dataclass(slots=True)
class RenderedPage:
    number: int  # 1-based
    image: Image.Image | None  # RGB render of the page as displayed (rotation applied); None: not rendered
    size: tuple[int, int]  # (width, height) in pixels of the render (whether or not it was made)
    words: list[Word]  # text layer, boxes normalised to the page as displayed
    timings: dict[str, float]
    table_labels: list[str] | None = None  # column labels of its last table, if it runs to the page's foot
    continued: list[str] = field(default_factory=list)  # labels its first table took from the previous page
    tables: list[TableSpan] = field(default_factory=list)  # where its tables' rows are in ``words``
    labelled: list[str] | None = None  # its word texts with the tables ``labelled`` (BM25's text; None: as words)


def open_pdf(data: bytes, config: IngestConfig) -> pymupdf.Document:
    """Open and validate: not encrypted, has pages, not over the page limit."""
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise CorruptDocument(f"PDF cannot be opened ({exc}); upload a valid, unencrypted PDF") from exc
    if getattr(doc, "is_repaired", False) and b"%%EOF" not in data[-4096:]:
        doc.close()
        raise CorruptDocument("PDF is truncated (no end-of-file marker; the cross-reference table had to be "
                              "rebuilt); upload the complete file", detail={"reason": "truncated"})
    if doc.needs_pass or doc.is_encrypted:
        doc.close()
        raise CorruptDocument("PDF is encrypted (password protected); upload an unencrypted copy",
                              detail={"reason": "encrypted"})
    if doc.page_count == 0:
        doc.close()
        raise CorruptDocument("PDF has no pages (corrupt or truncated file)")
    if doc.page_count > config.max_pages:
        n = doc.page_count
        doc.close()
        raise TooLarge(f"PDF has {n} pages; the limit is {config.max_pages} (MMRAG_INGEST__MAX_PAGES)")
    return doc


def page_text(page: pymupdf.Page) -> tuple[list[RawWord], list[Word]]:
    """The text layer's words (reading order) twice: in page points (unrotated, for the table finders)
    and with boxes normalised to the page as displayed."""
    raw: list[RawWord] = [(w[0], w[1], w[2], w[3], w[4]) for w in page.get_text("words", sort=True)]
    width, height = page.rect.width, page.rect.height  # displayed (rotated) size
    m = page.rotation_matrix
    a, b, c, d, e, f = float(m.a), float(m.b), float(m.c), float(m.d), float(m.e), float(m.f)
    words = []
    for x0, y0, x1, y1, text in raw:
        xs = (a * x0 + c * y0 + e, a * x1 + c * y1 + e)
        ys = (b * x0 + d * y0 + f, b * x1 + d * y1 + f)
        box = (min(xs) / width, min(ys) / height, max(xs) / width, max(ys) / height)
        words.append(Word(text=text, bbox=tuple(min(max(v, 0.0), 1.0) for v in box)))  # type: ignore[arg-type]
    return raw, words


def page_words(page: pymupdf.Page) -> list[Word]:
    """Words of the text layer with boxes normalised to the page as displayed."""
    return page_text(page)[1]


def render_page(doc: pymupdf.Document, number: int, config: IngestConfig,
                inherited: list[str] | None = None, image: bool = True) -> RenderedPage:
    """Page ``number`` (1-based): its text layer (tables as rows when ``config.tables``) and, if
    ``image``, its render; a page that cannot be read makes the document corrupt. ``inherited``: the
    previous page's :attr:`RenderedPage.table_labels` (a table it continues)."""
    timings: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        page = doc.load_page(number - 1)
        raw, words = page_text(page)
        t1 = time.perf_counter()
        timings["text"] = t1 - t0
        tables = (read_tables(page, raw, words, inherited, config.table_rows,
                              labelled=config.bm25_table_rows == "labelled") if config.tables else None)
        words = tables.words if tables else words
        t2 = time.perf_counter()
        if tables is not None:
            timings["tables"] = t2 - t1
        _, size = pixmap_matrix(page, config.dpi, config.max_page_pixels)
        rendered = render_image(page, config.dpi, config.max_page_pixels) if image else None
        if image:
            timings["render"] = time.perf_counter() - t2
    except Exception as exc:
        raise CorruptDocument(f"page {number} of the PDF cannot be rendered ({exc})") from exc
    return RenderedPage(number, rendered, size, words, timings, tables.last_labels if tables else None,
                        tables.continued if tables else [], tables.spans if tables else [],
                        tables.labelled if tables else None)


def table_labels_before(doc: pymupdf.Document, first: int, config: IngestConfig) -> list[str] | None:
    """The column labels a table at the top of page ``first`` may continue: those of page ``first - 1``'s
    last table (one extra table search for a batch starting mid-document; that table's own labels, as it
    is not known what page ``first - 2`` held)."""
    if first <= 1 or not config.tables:
        return None
    page = doc.load_page(first - 2)
    return read_tables(page, *page_text(page), how=config.table_rows).last_labels


def render_pages(doc: pymupdf.Document, config: IngestConfig, first: int = 1, last: int | None = None,
                 images: bool = True, on_page: Callable[[int], None] | None = None) -> Iterator[RenderedPage]:
    """Pages ``first..last`` (1-based, inclusive; default: all), rendered if ``images``; each page's
    tables may continue the previous page's last table. ``on_page`` is told each number as its work starts."""
    labels = table_labels_before(doc, first, config)
    for number in range(first, (last or doc.page_count) + 1):
        if on_page is not None:
            on_page(number)
        rendered = render_page(doc, number, config, labels, images)
        labels = rendered.table_labels
        yield rendered


def has_marks(doc: pymupdf.Document, number: int) -> bool:
    """Whether page ``number`` shows anything but its text layer: an image or a vector drawing (what OCR
    could read). A blank page has neither."""
    page = doc.load_page(number - 1)
    return bool(page.get_images(full=False)) or bool(page.get_cdrawings())


def layer_text(doc: pymupdf.Document, number: int) -> str:
    """Page ``number``'s text layer as PyMuPDF extracts it, control codes kept (its words drop them)."""
    return str(doc.load_page(number - 1).get_text())


def render_for_ocr(doc: pymupdf.Document, number: int, config: IngestConfig) -> Image.Image:
    """A higher-resolution render of one page for Tesseract (still under the pixel cap)."""
    page = doc.load_page(number - 1)
    zoom = render_zoom(page.rect.width, page.rect.height, config.ocr_dpi, config.max_page_pixels)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace=pymupdf.csRGB)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
