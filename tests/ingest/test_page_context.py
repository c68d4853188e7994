"""Page context on real PDFs built here: section paths from an outline and from type (size, bold), a
table continued over a page break without its header, and batches starting mid-document."""

from __future__ import annotations

import pymupdf
import pytest

from mmrag.config import CorpusConfig, IngestConfig
from mmrag.ingest.parse import parse_pdf
from mmrag.jobs.embedding import embed_pages
from mmrag.types import Document, SearchRequest

CFG = IngestConfig(ocr=False)
DOC_ID = "d" * 32
WIDTHS = [140, 120, 120]
REVENUE = ["Region", "Revenue 2023", "Revenue 2022"]


def _body(page: pymupdf.Page, y: float, lines: int, topic: str) -> float:
    for i in range(lines):
        page.insert_text((72, y + 14 * i), f"Line {i} of the text about {topic}, set in the body type.", fontsize=10)
    return y + 14 * lines


def outline_pdf() -> bytes:
    doc = pymupdf.open()
    for n in range(5):
        _body(doc.new_page(), 80, 8, f"page {n + 1}")
    doc.set_toc([[1, "Part I", 1], [2, "Item 2. Management's Discussion", 2], [3, "Liquidity", 3],
                 [1, "Part II", 5]])
    return doc.tobytes()


def headings_pdf() -> bytes:
    doc = pymupdf.open()
    p1 = doc.new_page()
    p1.insert_text((72, 72), "Chapter 1 Getting Started", fontsize=18)
    y = _body(p1, 100, 6, "starting")
    p1.insert_text((72, y + 20), "Installing the package", fontsize=10, fontname="hebo")  # bold, body size
    _body(p1, y + 40, 6, "installing")
    _body(doc.new_page(), 80, 20, "more installing")  # no heading: the path carries over
    p3 = doc.new_page()
    p3.insert_text((72, 72), "Configuration files", fontsize=10, fontname="hebo")
    _body(p3, 100, 6, "configuring")
    p4 = doc.new_page()
    p4.insert_text((72, 72), "Chapter 2 Operations", fontsize=18)
    p4.insert_text((72, 100), "Label A", fontsize=10, fontname="hebo")  # cells side by side: not headings
    p4.insert_text((300, 100), "Label B", fontsize=10, fontname="hebo")
    _body(p4, 130, 6, "operating")
    return doc.tobytes()


def _ruled_table(page: pymupdf.Page, y: float, rows: list[list[str]], height: float = 18) -> float:
    for row in rows:
        x = 72.0
        for width, text in zip(WIDTHS, row, strict=True):
            page.draw_rect(pymupdf.Rect(x, y, x + width, y + height), color=(0, 0, 0), width=0.7)
            page.insert_text((x + 3, y + height - 5), text, fontsize=9)
            x += width
        y += height
    return y


def continued_table_pdf() -> bytes:
    """p1 a heading and text; p2 a revenue table with its header running to the foot of the page; p3 the
    table continued at the top without its header (Antarctica, Oceania); p4 a headcount table with its
    own header that also has an Antarctica row (the look-alike)."""
    doc = pymupdf.open()
    p1 = doc.new_page()
    p1.insert_text((72, 72), "Regional results", fontsize=18)
    _body(p1, 100, 20, "the regions")
    p2 = doc.new_page()
    _body(p2, 72, 4, "revenue by region")
    rows = [REVENUE, *([f"Region {c}", f"{1000 + 7 * i:,}", f"{900 + 5 * i:,}"]
                       for i, c in enumerate("ABCDEFGHIJKLMNOPQRST"))]
    assert _ruled_table(p2, 400, rows) > 760  # to the foot of the page
    p3 = doc.new_page()
    _ruled_table(p3, 60, [["Antarctica", "4,321", "1,234"], ["Oceania", "2,222", "1,111"]])
    _body(p3, 140, 3, "the notes on the regions")
    p4 = doc.new_page()
    p4.insert_text((72, 72), "Employees", fontsize=18)
    _ruled_table(p4, 100, [["Region", "Headcount 2023", "Headcount 2022"], ["Antarctica", "55", "51"],
                           ["Oceania", "77", "70"]])
    return doc.tobytes()


def test_outline_gives_the_deepest_entries_in_force():
    pages = parse_pdf(outline_pdf(), DOC_ID, CFG)
    assert [p.context for p in pages] == [
        ["Part I"], ["Part I", "Item 2. Management's Discussion"],
        ["Part I", "Item 2. Management's Discussion", "Liquidity"],
        ["Part I", "Item 2. Management's Discussion", "Liquidity"], ["Part II"]]


def test_headings_from_type_size_and_bold_carry_over_until_the_next():
    pages = parse_pdf(headings_pdf(), DOC_ID, CFG)
    assert [p.context for p in pages] == [
        ["Chapter 1 Getting Started", "Installing the package"],
        ["Chapter 1 Getting Started", "Installing the package"],
        ["Chapter 1 Getting Started", "Configuration files"],
        ["Chapter 2 Operations"]]


@pytest.mark.parametrize("make", [outline_pdf, headings_pdf, continued_table_pdf])
def test_a_batch_starting_mid_document_gets_the_whole_parse_context(make):
    data = make()
    whole = parse_pdf(data, DOC_ID, CFG)
    for first in range(2, len(whole) + 1):
        batch = parse_pdf(data, DOC_ID, CFG, first, min(first + 1, len(whole)))
        expected = whole[first - 1:first + 1]
        assert [(p.context, p.table_header, p.text) for p in batch] == \
            [(p.context, p.table_header, p.text) for p in expected]


@pytest.mark.parametrize(("how", "continued_rows", "own_rows"), [
    ("header", "| Region | Revenue 2023 | Revenue 2022 | | Antarctica | 4,321 | 1,234 |",
     "| Region | Headcount 2023 | Headcount 2022 | | Antarctica | 55 | 51 |"),
    ("labelled", "| Antarctica | Revenue 2023: 4,321 | Revenue 2022: 1,234 |", "| Antarctica | Headcount 2023: 55 |"),
])
def test_continued_table_rows_carry_the_previous_pages_column_labels(how, continued_rows, own_rows):
    pages = parse_pdf(continued_table_pdf(), DOC_ID, IngestConfig(ocr=False, table_rows=how))
    continued = pages[2]
    assert continued.table_header == REVENUE
    assert continued_rows in continued.text
    assert continued.context == ["Regional results"]
    assert pages[1].table_header == [] and pages[3].table_header == []  # their own headers
    assert own_rows in pages[3].text


def test_section_path_is_in_the_point_payload():
    pages = parse_pdf(outline_pdf(), DOC_ID, CFG)
    doc = Document(id=DOC_ID, filename="o.pdf", media_type="application/pdf", size_bytes=1, pages=pages)
    points = embed_pages(doc, {}, [], CFG)
    assert points[2].payload["section"] == ["Part I", "Item 2. Management's Discussion", "Liquidity"]


def test_a_query_naming_row_and_column_finds_the_continued_page(tmp_path, minilm):
    from mmrag.pipeline import build_pipeline
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "data")
    settings.jobs.batch_pages = 2  # the continued page starts the second batch
    pipe = build_pipeline(settings, embedders={"text": minilm})
    try:
        pipe.corpora.create_corpus("t", CorpusConfig(spaces=["text", "bm25"], chunk_context=["section"]))
        info = pipe.ingest.file_bytes("t", continued_table_pdf(), "regions.pdf").document
        stored = pipe.catalog.pages.of_document("t", info.id)
        assert stored[2].table_header == REVENUE and stored[0].context == ["Regional results"]
        assert pipe.catalog.pages.stored("t", info.id)[2].text.startswith(
            "| Region | Revenue 2023 | Revenue 2022 | | Antarctica | 4,321 |")
        for spaces in (["text"], ["bm25"], ["text", "bm25"]):
            hits = pipe.search("t", SearchRequest(query="Antarctica revenue 2023", top_k=4, spaces=spaces)).evidence
            assert hits[0].page == 3, (spaces, [(e.page, e.score) for e in hits])
            assert hits[0].section == ["Regional results"]  # shown with the result (payload "section")
    finally:
        pipe.close()
