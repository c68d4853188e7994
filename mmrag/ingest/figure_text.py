"""Words inside the pictures of a page that has a text layer: OCR of the image regions the layer has no words in.

A chart, a screenshot or a slide placed in a born-digital PDF as a raster image carries words (axis labels,
legends, a diagram's boxes, a photographed sign) that no text layer holds, so neither BM25 nor the text
embedding could find the page by them. Each image placed on the page that covers at least ``min_area`` of it
and holds fewer than :data:`MAX_LAYER_WORDS` of the layer's words is rendered alone (a clip of the page, at the
OCR resolution, under the page's pixel cap) and read by Tesseract (:func:`mmrag.ingest.ocr.ocr_image`); its
words of :data:`MIN_CONFIDENCE` or more that hold a letter or a digit join the page's words, with their boxes
on the page. The largest ``max_regions`` regions are read; a region mostly inside one already read is not read
again. Vector drawings are not read (their words, where they have any, are in the text layer), nor are the
pictures of a page displayed rotated (its words' boxes would need the rotation's own mapping).
"""

from __future__ import annotations

import time

import pymupdf
from PIL import Image

from mmrag.ingest.ocr import ocr_image
from mmrag.page_render import render_zoom
from mmrag.types import Word

MAX_LAYER_WORDS = 3  # a region with this many of the text layer's words (centres inside) has its words already
MIN_CONFIDENCE = 60.0  # Tesseract's confidence (0..100) below which a word read in a picture is dropped
MIN_SIDE_PX = 24  # a region rendered smaller than this on a side holds no readable word
NESTED = 0.8  # a region with this share of its area inside one already chosen is not read again

Box = tuple[float, float, float, float]


def _area(b: Box) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _overlap(a: Box, b: Box) -> float:
    return _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def choose_regions(images: list[Box], words: list[Word], min_area: float, max_regions: int) -> list[Box]:
    """The picture regions to read, largest first: boxes normalised to the page, each clipped to it, covering at
    least ``min_area`` of the page, with fewer than :data:`MAX_LAYER_WORDS` layer words (by centre), none mostly
    inside a larger one chosen; at most ``max_regions``. Pure: the page's image boxes and words in, boxes out."""
    centres = [((w.bbox[0] + w.bbox[2]) / 2, (w.bbox[1] + w.bbox[3]) / 2) for w in words]
    chosen: list[Box] = []
    clipped = [(max(0.0, b[0]), max(0.0, b[1]), min(1.0, b[2]), min(1.0, b[3])) for b in images]
    for box in sorted(clipped, key=lambda b: (-_area(b), b)):
        if len(chosen) >= max_regions or _area(box) < max(min_area, 1e-9):
            break
        inside = sum(1 for x, y in centres if box[0] <= x <= box[2] and box[1] <= y <= box[3])
        if inside >= MAX_LAYER_WORDS or any(_overlap(box, c) >= NESTED * _area(box) for c in chosen):
            continue
        chosen.append(box)
    return chosen


def image_boxes(page: pymupdf.Page) -> list[Box]:
    """Where the page's images are placed, normalised to the page (an unrotated page's coordinates)."""
    width, height = page.rect.width, page.rect.height
    boxes = []
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        if x1 > x0 and y1 > y0:
            boxes.append((x0 / width, y0 / height, x1 / width, y1 / height))
    return boxes


def read_region(page: pymupdf.Page, box: Box, *, dpi: int, max_pixels: int, languages: str) -> list[Word]:
    """Tesseract's words of one region (normalised ``box``) of an unrotated page, boxes normalised to the page."""
    width, height = page.rect.width, page.rect.height
    clip = pymupdf.Rect(box[0] * width, box[1] * height, box[2] * width, box[3] * height)
    zoom = render_zoom(clip.width, clip.height, dpi, max_pixels)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False, colorspace=pymupdf.csRGB)
    if min(pix.width, pix.height) < MIN_SIDE_PX:
        return []
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    bw, bh = box[2] - box[0], box[3] - box[1]
    out = []
    for w in ocr_image(image, languages=languages):
        if (w.confidence or 0.0) < MIN_CONFIDENCE or not any(ch.isalnum() for ch in w.text):
            continue
        x0, y0, x1, y1 = w.bbox
        out.append(Word(text=w.text, confidence=w.confidence,
                        bbox=(box[0] + x0 * bw, box[1] + y0 * bh, box[0] + x1 * bw, box[1] + y1 * bh)))
    return out


def figure_words(page: pymupdf.Page, words: list[Word], *, min_area: float, max_regions: int, dpi: int,
                 max_pixels: int, languages: str, timings: dict[str, float]) -> list[Word]:
    """The words of the page's pictures that its text layer (``words``) lacks, in region order (largest
    first) and Tesseract's reading order within each; ``timings["figure_ocr"]`` gets the seconds when any
    region was read. No words for a page displayed rotated."""
    if page.rotation % 360 or max_regions <= 0:
        return []
    regions = choose_regions(image_boxes(page), words, min_area, max_regions)
    if not regions:
        return []
    t0 = time.perf_counter()
    out = [w for box in regions
           for w in read_region(page, box, dpi=dpi, max_pixels=max_pixels, languages=languages)]
    timings["figure_ocr"] = time.perf_counter() - t0
    return out
