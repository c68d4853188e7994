"""Tables on real filing pages: the cheap pre-test (a statement page has a table, a text page with a
rule or a logo has none, and neither runs PyMuPDF's table finder), a cell found by its row and column,
and how the rows are written into the text layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig, IngestConfig
from mmrag.ingest.parse import parse_pdf_batch
from mmrag.ingest.pdf import page_text
from mmrag.ingest.table_grid import find_grid_tables
from mmrag.ingest.table_ruled import crossings, ruled_region
from mmrag.ingest.tables import find_tables, read_tables
from mmrag.jobs.embedding import page_inputs
from mmrag.spaces.base import PageInput
from mmrag.spaces.bm25 import Bm25Space
from mmrag.spaces.text import TextDenseSpace
from mmrag.types import Document
from tests.conftest import CORPUS

SHARED = CORPUS.parent
AAPL = SHARED / "sec-10q" / "pdf" / "2022 Q3 AAPL.pdf"
FILINGS = SHARED / "filings" / "pdf"


def _page(path: Path, number: int) -> pymupdf.Page:
    return pymupdf.open(path)[number - 1]


def _cell(table, row_label: str, column_label: str) -> str:  # type: ignore[no-untyped-def]
    """The text of the cell in the row whose label is ``row_label``, under ``column_label``."""
    j = table.labels.index(column_label)
    row = next(r for r in table.rows if r[0] is not None and r[0].text == row_label)
    return row[j].text if row[j] is not None else ""


@pytest.fixture
def no_table_finder(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts calls of PyMuPDF's find_tables (the expensive search) made meanwhile."""
    calls: list[int] = []
    original = pymupdf.Page.find_tables

    def counted(self: pymupdf.Page, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "find_tables", counted)
    return calls


def test_statement_page_has_its_table_with_cells_by_row_and_column(no_table_finder: list[int]) -> None:
    page = _page(AAPL, 4)  # condensed consolidated statements of operations, no cell borders to speak of
    raw, _ = page_text(page)
    [table] = find_tables(page, raw)
    assert table.labels[1:] == ["Three Months Ended June 25, 2022", "Three Months Ended June 26, 2021",
                                "Nine Months Ended June 25, 2022", "Nine Months Ended June 26, 2021"]
    assert _cell(table, "Total net sales", "Three Months Ended June 25, 2022") == "82,959"
    assert _cell(table, "Total net sales", "Nine Months Ended June 26, 2021") == "282,457"
    assert _cell(table, "Research and development", "Three Months Ended June 26, 2021") == "5,717"
    assert _cell(table, "Net income", "Nine Months Ended June 25, 2022") == "$ 79,082"
    assert no_table_finder == []  # found from the words alone


def test_a_filing_with_underlines_only_has_its_balance_sheet() -> None:
    page = _page(FILINGS / "3M_2018_10K.pdf", 58)  # balance sheet: rules under totals, no grid
    raw, _ = page_text(page)
    [table] = find_tables(page, raw)
    assert table.labels[1:] == ["December 31, 2018", "December 31, 2017"]
    assert _cell(table, "Cash and cash equivalents", "December 31, 2018") == "$ 2,853"
    assert _cell(table, "Total inventories", "December 31, 2017") == "4,034"


@pytest.mark.parametrize(("path", "number"), [
    (FILINGS / "3M_2018_10K.pdf", 42),  # running text with numbers in it, two rules
    (FILINGS / "MCDONALDS_8K_dated-2023-02-13.pdf", 1),  # a cover page: logo, boxes, checkmarks
])
def test_text_pages_with_rules_or_a_logo_have_no_table(path: Path, number: int, no_table_finder: list[int]) -> None:
    page = _page(path, number)
    raw, words = page_text(page)
    assert page.get_cdrawings()  # the old test ("any vector drawing") would have searched this page
    assert find_grid_tables(raw) == [] and ruled_region(crossings(page.get_cdrawings())) is None
    out = read_tables(page, raw, words)
    assert out.tables == 0 and out.words == words
    assert no_table_finder == []


def test_header_rows_write_the_labels_once_and_each_row_once() -> None:
    page = _page(AAPL, 4)
    text = " ".join(w.text for w in read_tables(page, *page_text(page), how="header").words)
    assert text.count("Three Months Ended June 25, 2022") == 1
    assert "| | Three Months Ended June 25, 2022 | Three Months Ended June 26, 2021 | Nine Months Ended" in text
    assert "| Total net sales | 82,959 | 81,434 | 304,182 | 282,457 |" in text


def test_labelled_rows_carry_the_label_in_every_value_with_the_cells_boxes() -> None:
    page = _page(AAPL, 4)
    words = read_tables(page, *page_text(page), how="labelled").words
    text = " ".join(w.text for w in words)
    assert "| Total net sales | Three Months Ended June 25, 2022: 82,959 |" in text
    i = next(i for i, w in enumerate(words) if w.text == "82,959")
    x0, y0, x1, y1 = words[i].bbox
    assert 0 < x1 - x0 < 0.2 and 0 < y1 - y0 < 0.05  # one cell, not the table
    plain = " ".join(w.text for w in page_text(page)[1])
    assert "82,959" in plain and "Three Months Ended June 25, 2022: 82,959" not in plain


def test_bm25_indexes_the_tables_labelled_while_the_text_keeps_the_header_form(tmp_path: Path) -> None:
    src = pymupdf.open(AAPL)
    one = pymupdf.open()
    one.insert_pdf(src, from_page=3, to_page=3)
    data = one.tobytes()
    page = parse_pdf_batch(data, "d", IngestConfig()).pages[0]
    labelled = " ".join(w.text for w in read_tables(_page(AAPL, 4), *page_text(_page(AAPL, 4)), how="labelled").words)
    assert page.text.count("Three Months Ended June 25, 2022") == 1  # the stored, displayed, embedded text
    assert page.bm25_text == labelled and page.indexed_text == labelled  # BM25's: every value with its label
    assert parse_pdf_batch(data, "d", IngestConfig(bm25_table_rows="as-text")).pages[0].bm25_text is None
    labelled_page = parse_pdf_batch(data, "d", IngestConfig(table_rows="labelled")).pages[0]
    assert labelled_page.bm25_text is None  # the text is so already
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig())
    catalog.documents.add("c", Document(id="d", filename="q.pdf", media_type="application/pdf", size_bytes=len(data),
                                       pages=[page]))
    assert catalog.pages.stored("c", "d")[0].bm25_text == labelled  # re-embedding and re-weighting read it back
    assert [t.text for t in catalog.pages.texts("c")] == [labelled]
    (vector,) = Bm25Space(100.0).page_vectors([PageInput(page, [])])
    assert vector["bm25"] == Bm25Space(100.0).text_vectors([labelled])[0]


def test_a_two_column_page_keeps_the_prose_beside_its_table_out_of_it() -> None:
    page = _page(FILINGS / "JPMORGAN_2022Q1_10Q.pdf", 9)  # a revenue table left, commentary right
    raw, _ = page_text(page)
    table = find_tables(page, raw)[0]
    assert _cell(table, "Card income", "Three months ended March 31, 2022") == "975"
    assert _cell(table, "Asset management, administration and commissions",
                 "Three months ended March 31, 2021") == "5,029"  # a row label over two lines
    assert not any("higher" in c.text for r in table.rows for c in r if c is not None)


class _Recording:
    """An embedder stand-in that records what it is asked to embed."""

    dim = 8

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_many(self, texts: list[str], kind: str = "document") -> list[np.ndarray]:
        self.texts.extend(texts)
        return [np.ones(self.dim, dtype=np.float32) for _ in texts]


@pytest.mark.parametrize("how", ["chunk-header", "header"])
def test_chunks_inside_a_long_table_are_embedded_after_its_header_line(how: str) -> None:
    data = (FILINGS / "3M_2018_10K.pdf").read_bytes()
    config = IngestConfig(table_rows=how)
    [page] = parse_pdf_batch(data, "d" * 32, config, 58, 58, images=False).pages  # the balance sheet: ~4 chunks of rows
    [span] = page.tables
    assert span.header == "(Dollars in millions, except per share amount) | December 31, 2018 | December 31, 2017"
    assert " ".join(w.text for w in page.words[span.start:span.end]).startswith(
        "| (Dollars in millions, except per share amount) | December 31, 2018 | December 31, 2017 |")
    doc = Document(id="d" * 32, filename="3M_2018_10K.pdf", media_type="application/pdf", size_bytes=len(data),
                   pages=[page])
    embedder = _Recording()
    space = TextDenseSpace(embedder)  # type: ignore[arg-type]
    inputs = page_inputs(doc, [space], config)
    space.page_vectors(inputs)
    chunks = inputs[0].chunks
    assert len(chunks) >= 3 and len(embedder.texts) == len(chunks)
    for text, chunk in zip(embedder.texts[1:], chunks[1:], strict=True):  # chunks 2.. start inside the table
        expected = f"{span.header}\n{chunk.text}" if how == "chunk-header" else chunk.text
        assert text == expected
    assert embedder.texts[0] == chunks[0].text  # the first chunk holds the header line itself

