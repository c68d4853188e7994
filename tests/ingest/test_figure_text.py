"""OCR of the pictures of born-digital pages (mmrag/ingest/figure_text.py), with the real Tesseract."""

from __future__ import annotations

import io

import pymupdf
from PIL import Image, ImageDraw, ImageFont

from mmrag.config import IngestConfig
from mmrag.ingest.figure_text import MAX_LAYER_WORDS, choose_regions
from mmrag.ingest.parse import parse_pdf_batch
from mmrag.types import Word
from tests.ingest.helpers import parse_document

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PICTURE = pymupdf.Rect(72, 300, 522, 500)  # where the chart goes on a Letter page (612 x 792 pt)
DOC_ID = "f" * 32
ON = IngestConfig(figure_ocr=True)


def chart_png(lines: list[str]) -> bytes:
    """A picture of words, as a chart's labels or a slide's title are drawn inside an image."""
    img = Image.new("RGB", (1350, 600), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 64)
    for i, line in enumerate(lines):
        draw.text((40, 40 + 110 * i), line, fill="black", font=font)
    draw.rectangle((30, 30, 1320, 570), outline="black", width=4)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def pdf_with_chart(layer_over_picture: str = "", rotation: int = 0) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 100), "Quarterly report of the widget company, prose above the chart.", fontsize=11)
    page.insert_image(PICTURE, stream=chart_png(["REVENUE GROWTH", "Quokka Marmalade", "2019 2020 2021"]))
    if layer_over_picture:
        page.insert_text((80, 330), layer_over_picture, fontsize=11)
    if rotation:
        page.set_rotation(rotation)
    return doc.tobytes()


def word(text: str, box: tuple[float, float, float, float]) -> Word:
    return Word(text=text, bbox=box)


def test_regions_are_large_pictures_without_layer_words_largest_first_and_never_read_twice() -> None:
    big, small, nested, other = (0.1, 0.1, 0.9, 0.5), (0.0, 0.0, 0.1, 0.1), (0.2, 0.2, 0.8, 0.45), (0.1, 0.6, 0.5, 0.9)
    assert choose_regions([small, other, big, nested], [], 0.05, 4) == [big, other]  # small: 1 %; nested: inside big
    assert choose_regions([other, big], [], 0.05, 1) == [big]  # the largest within the cap
    assert choose_regions([big], [], 0.05, 0) == []
    labelled = [word(f"w{i}", (0.2 + i / 100, 0.2, 0.21 + i / 100, 0.21)) for i in range(MAX_LAYER_WORDS)]
    assert choose_regions([big, other], labelled, 0.05, 4) == [other]  # the layer already has big's words
    assert choose_regions([big], labelled[:-1], 0.05, 4) == [big]  # fewer than MAX_LAYER_WORDS: still read
    assert choose_regions([(-0.5, 0.5, 0.5, 1.5)], [], 0.05, 4) == [(0.0, 0.5, 0.5, 1.0)]  # clipped to the page


def test_a_pictures_words_join_the_page_with_boxes_inside_it() -> None:
    page = parse_pdf_batch(pdf_with_chart(), DOC_ID, ON).pages[0]
    assert "figure_ocr" in page.timings and "ocr" not in page.timings  # the layer is kept, the picture read
    assert page.words[0].text == "Quarterly" and page.words[0].confidence is None
    found = {w.text: w for w in page.words if w.confidence is not None}
    assert {"REVENUE", "GROWTH", "Quokka", "Marmalade", "2020"} <= set(found), sorted(found)
    x0, y0, x1, y1 = PICTURE.x0 / 612, PICTURE.y0 / 792, PICTURE.x1 / 612, PICTURE.y1 / 792
    for w in found.values():
        assert x0 - 0.01 <= w.bbox[0] < w.bbox[2] <= x1 + 0.01 and y0 - 0.01 <= w.bbox[1] < w.bbox[3] <= y1 + 0.01
    assert found["REVENUE"].bbox[1] < found["Quokka"].bbox[1] < found["2020"].bbox[1]  # lines in the image's order
    assert "Marmalade" in page.text and "Marmalade" in (page.bm25_text or page.text)


def test_off_when_asked_when_the_layer_covers_the_picture_and_on_rotated_pages() -> None:
    off = parse_pdf_batch(pdf_with_chart(), DOC_ID, IngestConfig(figure_ocr=False)).pages[0]
    no_ocr = parse_pdf_batch(pdf_with_chart(), DOC_ID, IngestConfig(ocr=False, figure_ocr=True)).pages[0]
    covered = parse_pdf_batch(pdf_with_chart("revenue growth by year"), DOC_ID, ON).pages[0]
    turned = parse_pdf_batch(pdf_with_chart(rotation=90), DOC_ID, ON).pages[0]
    for page in (off, no_ocr, covered, turned):
        assert "figure_ocr" not in page.timings and "Marmalade" not in page.text
        assert page.words and all(w.confidence is None for w in page.words)  # the text layer alone


def test_an_upload_parsed_by_the_jobs_parse_workers_carries_the_pictures_words() -> None:
    doc = parse_document(pdf_with_chart(), "chart.pdf", ON)
    assert "Marmalade" in doc.pages[0].text and "figure_ocr" in doc.pages[0].timings
