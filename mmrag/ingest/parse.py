"""Bytes to :class:`Document`: sniff the type, check limits, render, read text, OCR."""

from __future__ import annotations

import hashlib
import time
from pathlib import PurePath
from typing import Any

from PIL import Image

from mmrag.config import IngestConfig
from mmrag.errors import InvalidInput, TooLarge, UnsupportedMediaType
from mmrag.ingest import pdf
from mmrag.ingest.ids import document_id, page_id
from mmrag.ingest.images import IMAGE_TYPES, decode_image, encode_png
from mmrag.ingest.ocr import detect_rotation, ocr_image, upright
from mmrag.types import Document, Page, TextSource, Word

SUPPORTED = ["application/pdf", *IMAGE_TYPES]

_MAGIC = [
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"BM", "image/bmp"),
]

_EXTENSIONS = {
    ".pdf": "application/pdf", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
    ".webp": "image/webp", ".tif": "image/tiff", ".tiff": "image/tiff", ".bmp": "image/bmp",
    ".gif": "image/gif",
}


def sniff_media_type(data: bytes, filename: str = "") -> str:
    """The media type the bytes really are. The extension only decides between nothing:
    a ``.png`` holding text is rejected, naming what its bytes look like."""
    head = data[:1024]
    for magic, media in _MAGIC:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if b"%PDF-" in head:  # PDFs may have junk before the header
        return "application/pdf"
    claimed = _EXTENSIONS.get(PurePath(filename).suffix.lower(), "unknown")
    raise UnsupportedMediaType(
        f"{filename or 'file'}: content is not a supported type (extension says {claimed}, bytes do not match); "
        f"allowed: {', '.join(SUPPORTED)}"
    )


def _usable(words: list[Word], min_chars: int) -> bool:
    return sum(len(w.text.strip()) for w in words) >= min_chars


def _page(doc_id: str, number: int, image: Image.Image, words: list[Word], source: TextSource,
          timings: dict[str, float]) -> Page:
    t0 = time.perf_counter()
    png = encode_png(image)
    timings["encode_png"] = time.perf_counter() - t0
    return Page(
        id=page_id(doc_id, number), document_id=doc_id, number=number, width=image.width,
        height=image.height, image_hash=hashlib.sha256(png).hexdigest(),
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


def parse_pdf(data: bytes, doc_id: str, config: IngestConfig, first: int = 1, last: int | None = None) -> list[Page]:
    """Pages ``first..last`` (1-based, inclusive; default all): render, text layer, OCR when unusable."""
    doc = pdf.open_pdf(data, config)
    try:
        pages = []
        for rendered in pdf.render_pages(doc, config, first, last):
            words, source, image = rendered.words, TextSource.LAYER, rendered.image
            if not _usable(words, config.min_text_chars) and config.ocr:
                hi_res = pdf.render_for_ocr(doc, rendered.number, config)
                words, rotation = _ocr(hi_res, config, rendered.timings)
                source, image = TextSource.OCR, upright(image, rotation)
            pages.append(_page(doc_id, rendered.number, image, words, source, rendered.timings))
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
    media_type = sniff_media_type(data, name)
    doc_id = document_id(data)
    t0 = time.perf_counter()
    if media_type == "application/pdf":
        pages = parse_pdf(data, doc_id, config)
    else:
        pages = parse_image(data, doc_id, name, config)
    return Document(
        id=doc_id, filename=name, media_type=media_type, size_bytes=len(data), pages=pages,
        metadata=dict(metadata or {}), timings={"parse": time.perf_counter() - t0},
    )
