"""Page context on real PDFs built here: section paths from an outline and from type (size, bold), a
table continued over a page break without its header, and batches starting mid-document."""

from __future__ import annotations

import pymupdf
import pytest

from mmrag.config import CorpusConfig, IngestConfig
from mmrag.ingest.page_context import section_paths
from mmrag.ingest.parse import parse_pdf_batch
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
    pages = parse_pdf_batch(outline_pdf(), DOC_ID, CFG).pages
    assert [p.context for p in pages] == [
        ["Part I"], ["Part I", "Item 2. Management's Discussion"],
        ["Part I", "Item 2. Management's Discussion", "Liquidity"],
        ["Part I", "Item 2. Management's Discussion", "Liquidity"], ["Part II"]]


def test_headings_from_type_size_and_bold_carry_over_until_the_next():
    pages = parse_pdf_batch(headings_pdf(), DOC_ID, CFG).pages
    assert [p.context for p in pages] == [
        ["Chapter 1 Getting Started", "Installing the package"],
        ["Chapter 1 Getting Started", "Installing the package"],
        ["Chapter 1 Getting Started", "Configuration files"],
        ["Chapter 2 Operations"]]


@pytest.mark.parametrize("make", [outline_pdf, headings_pdf, continued_table_pdf])
def test_a_batch_starting_mid_document_gets_the_whole_parse_context(make):
    data = make()
    whole = parse_pdf_batch(data, DOC_ID, CFG).pages
    for first in range(2, len(whole) + 1):
        batch = parse_pdf_batch(data, DOC_ID, CFG, first, min(first + 1, len(whole))).pages
        expected = whole[first - 1:first + 1]
        assert [(p.context, p.table_header, p.text) for p in batch] == \
            [(p.context, p.table_header, p.text) for p in expected]


@pytest.mark.parametrize(("how", "continued_rows", "own_rows"), [
    ("header", "| Region | Revenue 2023 | Revenue 2022 | | Antarctica | 4,321 | 1,234 |",
     "| Region | Headcount 2023 | Headcount 2022 | | Antarctica | 55 | 51 |"),
    ("labelled", "| Antarctica | Revenue 2023: 4,321 | Revenue 2022: 1,234 |", "| Antarctica | Headcount 2023: 55 |"),
])
def test_continued_table_rows_carry_the_previous_pages_column_labels(how, continued_rows, own_rows):
    pages = parse_pdf_batch(continued_table_pdf(), DOC_ID, IngestConfig(ocr=False, table_rows=how)).pages
    continued = pages[2]
    assert continued.table_header == REVENUE
    assert continued_rows in continued.text
    assert continued.context == ["Regional results"]
    assert pages[1].table_header == [] and pages[3].table_header == []  # their own headers
    assert own_rows in pages[3].text


def test_section_path_is_in_the_point_payload():
    pages = parse_pdf_batch(outline_pdf(), DOC_ID, CFG).pages
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


def _heading(page: pymupdf.Page, y: float, text: str, size: float = 10, bold: bool = True) -> None:
    page.insert_text((72, y), text, fontsize=size, fontname="hebo" if bold else "helv")


def report_pdf() -> bytes:
    """A report's pages: p1 a run-in heading and a note with a subheading, p2 the note continued, p3 a
    statement whose bold rows are not sections, a footnote at its foot and a unit line, p4 body only, p5
    an exhibit in small type after a large heading, p6 its continuation."""
    doc = pymupdf.open()
    p1 = doc.new_page()
    _heading(p1, 60, "Restructuring Actions:")
    y = _body(p1, 80, 4, "restructuring")
    _heading(p1, y + 20, "NOTE 5. Inventories")
    y = _body(p1, y + 40, 4, "inventories")
    _heading(p1, y + 20, "Finished goods costs")
    _body(p1, y + 40, 4, "finished goods")
    _body(doc.new_page(), 80, 30, "more on inventories")
    p3 = doc.new_page()
    _heading(p3, 60, "Consolidated Balance Sheets", size=10)
    _heading(p3, 80, "(In millions)")
    _heading(p3, 100, "Total current assets")  # a bold row of the statement
    _body(p3, 120, 10, "the statement's rows")
    _heading(p3, 300, "Signed by the Treasurer of")  # a label cut short
    _heading(p3, 330, "lower case start of a wrapped line")
    _body(p3, 360, 4, "the statement's last rows")
    _heading(p3, 760, "The accompanying notes are an integral part of this statement.")  # nothing with words below
    _body(doc.new_page(), 80, 30, "the next note")
    p5 = doc.new_page()
    _heading(p5, 60, "DEFERRED CASH AGREEMENT", size=16)
    _body(p5, 90, 20, "the agreement")
    p6 = doc.new_page()
    _heading(p6, 60, "Exhibit 31.1 Certification")
    _body(p6, 90, 20, "the certification")
    return doc.tobytes()


def test_long_report_headings_kinds_and_minor_headings_expire():
    pages = parse_pdf_batch(report_pdf(), DOC_ID, CFG).pages
    assert [p.context for p in pages] == [
        ["NOTE 5. Inventories", "Finished goods costs"],  # the run-in heading replaced, the note kept
        ["NOTE 5. Inventories", "Finished goods costs"],  # a minor heading heads the next page too
        ["Consolidated Balance Sheets"],  # a statement replaces the note; its rows, unit, footnote are not headings
        ["Consolidated Balance Sheets"],
        ["DEFERRED CASH AGREEMENT"],
        ["Exhibit 31.1 Certification"],  # a smaller exhibit heading still starts a new document
    ]


def test_a_running_header_is_a_heading_on_its_first_page_only():
    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page()
        _heading(page, 30, "Acme Corporation Annual Report")  # in the top margin of every page
        if n == 1:
            _heading(page, 80, "Liquidity and Capital Resources", size=14)
        _body(page, 100, 20, f"page {n + 1}")
    paths, _ = section_paths(pymupdf.open("pdf", doc.tobytes()), 1, 3)
    assert paths == {1: ["Acme Corporation Annual Report"], 2: ["Liquidity and Capital Resources"],
                     3: ["Liquidity and Capital Resources"]}  # the header again on p3 would sit under it


def long_pdf(pages: int = 90) -> bytes:
    """A Part heading on page 1, an Item on page 2, a note on page 70, body text everywhere else."""
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page()
        if n == 1:
            _heading(page, 60, "PART II", size=16)
        if n == 2:
            _heading(page, 60, "Item 8. Financial Statements", size=13)
        if n == 70:
            _heading(page, 60, "NOTE 12. Debt")
        _body(page, 90, 10, f"page {n}")
    return doc.tobytes()


def test_batches_reading_on_from_the_last_batch_give_the_whole_documents_paths():
    data = long_pdf()
    whole, _ = section_paths(pymupdf.open("pdf", data), 1, 90)
    assert whole[80] == ["PART II", "Item 8. Financial Statements", "NOTE 12. Debt"]
    doc = pymupdf.open("pdf", data)
    read, states = {}, {}
    for i, first in enumerate(range(1, 91, 16)):  # each batch reads on from the one three back (the job's window)
        paths, states[i] = section_paths(doc, first, min(90, first + 15), states.get(i - 3))
        read.update(paths)
    assert read == whole
    alone, _ = section_paths(doc, 65, 80)  # without a state, a heading beyond the look-back is missed
    assert alone[80] == ["NOTE 12. Debt"]


def test_ingestion_in_small_batches_keeps_a_heading_from_far_back(tmp_path):
    from mmrag.pipeline import build_pipeline
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "data")
    settings.jobs.batch_pages = 8
    pipe = build_pipeline(settings, embedders={})
    try:
        pipe.corpora.create_corpus("t", CorpusConfig(spaces=["bm25"]))
        info = pipe.ingest.file_bytes("t", long_pdf(), "long.pdf").document
        stored = {p.number: p.context for p in pipe.catalog.pages.of_document("t", info.id)}
        assert stored == section_paths(pymupdf.open("pdf", long_pdf()), 1, 90)[0]
        assert stored[88] == ["PART II", "Item 8. Financial Statements", "NOTE 12. Debt"]
    finally:
        pipe.close()
