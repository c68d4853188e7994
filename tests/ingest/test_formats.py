"""Every document kind: detected from its bytes, converted in the sandbox, pages with text, tables, facts."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from mmrag.config import IngestConfig
from mmrag.errors import UnsupportedMediaType
from mmrag.ingest.convert.html_safe import sanitize_html
from mmrag.ingest.doc_evidence import meaningful_title
from mmrag.ingest.file_metadata import file_facts
from mmrag.ingest.sniff import KINDS, sniff_kind
from mmrag.ingest.source import prepare_source
from mmrag.types import TextSource
from tests.ingest.helpers import parse_document

FORMATS = Path(os.environ.get("MMRAG_TEST_FORMATS", Path(__file__).resolve().parents[3] / "shared/corpus/formats"))
CFG = IngestConfig()
EXPECTED = {"docx": "docx", "pptx": "pptx", "xlsx": "xlsx", "xlsm": "xlsm", "odt": "odt", "odp": "odp",
            "ods": "ods", "doc": "doc", "html": "html", "md": "md", "epub": "epub", "csv": "csv", "eml": "eml"}


def formats_file(rel: str) -> bytes:
    path = FORMATS / rel
    assert path.exists(), f"formats corpus missing at {FORMATS} (set MMRAG_TEST_FORMATS)"
    return path.read_bytes()


@pytest.mark.parametrize("path", sorted(p for p in FORMATS.glob("*/*.*") if p.name != "LICENSE"),
                         ids=lambda p: p.name)
def test_kind_is_read_from_the_bytes(path):
    data = path.read_bytes()
    expected = EXPECTED[path.suffix[1:]]
    assert sniff_kind(data, path.name).name == expected
    if expected not in ("md", "csv"):  # only those need the extension (plain text otherwise)
        assert sniff_kind(data, "upload").name == expected, "detected without the extension"


def test_random_bytes_named_docx_are_refused():
    with pytest.raises(UnsupportedMediaType, match="extension says docx"):
        sniff_kind(os.urandom(4096), "report.docx")
    with pytest.raises(UnsupportedMediaType, match="content is text"):
        sniff_kind(b"plain words, not a document at all\n" * 20, "report.docx")
    assert sniff_kind(b"plain words\n" * 20, "notes").name == "txt"


@pytest.fixture(scope="module")
def converted() -> dict[str, object]:
    """One real conversion per converter and family, shared by the tests below."""
    files = {"docx": "docx/word_sample.docx", "xlsx": "xlsx/xlsx_01.xlsx", "md": "md/wiki.md",
             "csv": "csv/csv-semicolon.csv", "eml": "email/eml_with_attachment.eml",
             "epub": "epub/epub_purvis_poetry.epub"}
    return {k: parse_document(formats_file(rel), Path(rel).name, CFG) for k, rel in files.items()}


def _text(doc) -> str:
    return " ".join(p.text for p in doc.pages)


def test_office_document_becomes_pages_with_image_and_word_boxes(converted):
    doc = converted["docx"]
    assert doc.media_type.endswith("wordprocessingml.document") and len(doc.pages) == 2
    page = doc.pages[0]
    assert page.text_source is TextSource.LAYER and page.words
    assert all(0 <= v <= 1 for w in page.words for v in w.bbox)
    assert Image.open(io.BytesIO(page.image_png)).size == (page.width, page.height)
    gt = (FORMATS / "docx/groundtruth/word_sample.docx.md").read_text()
    assert "Summer activities" in gt and "Summer activities" in _text(doc)
    facts = doc.metadata["doc"]
    assert facts["author"] == "Christoph Auer" and facts["created"].startswith("2024-10-09")
    assert facts["source_kind"] == "docx" and facts["page_count"] == 2


def test_spreadsheet_rows_keep_their_column_labels(converted):
    text = _text(converted["xlsx"])
    assert "|" in text  # the sheet's grid came out as table rows
    csv_text = _text(converted["csv"])
    first = (FORMATS / "csv/csv-semicolon.csv").read_text().splitlines()
    header, row = first[0].split(";"), first[1].split(";")
    labels, values = [h.strip('"') for h in header[:3]], [v.strip('"') for v in row[:3]]
    assert f"| {' | '.join(labels)} |" in csv_text, csv_text[:400]  # the header line, once
    assert f"| {' | '.join(values)} |" in csv_text, csv_text[:400]  # the first row, cell by cell


def test_markdown_epub_email(converted):
    own = {k: file_facts(formats_file(rel), KINDS[k]).title for k, rel in
           (("md", "md/wiki.md"), ("epub", "epub/epub_purvis_poetry.epub"))}
    assert own == {"md": "IBM", "epub": "Poetry"}  # the first heading, the OPF title
    for kind in own:  # one word is no title to show: ingestion takes a line of the first pages instead
        title = converted[kind].metadata["doc"]["title"]
        assert title != own[kind] and meaningful_title(title) == title
    assert len(converted["epub"].pages) > 10
    eml = converted["eml"]
    assert "Alice Example" in _text(eml) and eml.metadata["doc"]["title"] == "Email with Attachment"


def test_html_loses_scripts_and_every_remote_reference():
    page = ('<html><head><title>T</title><script src="http://127.0.0.1:9/x.js">steal()</script>'
            '<link rel="stylesheet" href="http://127.0.0.1:9/s.css"><style>@import url(http://127.0.0.1:9/i.css);'
            'body{background:url("http://127.0.0.1:9/bg.png")}</style></head><body onload="go()">'
            '<img src="http://127.0.0.1:9/a.png"><img src="data:image/png;base64,iVBORw0KGgo=">'
            '<iframe src="http://127.0.0.1:9/f"></iframe><a href="http://127.0.0.1:9/l">link text</a>'
            '<p style="background:url(http://127.0.0.1:9/p.png)">kept words</p></body></html>')
    clean, title = sanitize_html(page)
    assert title == "T" and "kept words" in clean and "link text" in clean and "data:image/png" in clean
    for bad in ("127.0.0.1", "steal()", "onload", "<iframe", "<script", "<link"):
        assert bad not in clean, bad


def test_every_kind_has_a_converter():
    from mmrag.ingest.convert import CONVERTER
    from mmrag.ingest.sniff import KINDS

    documents = {k for k, v in KINDS.items() if v.family not in ("pdf", "image")}
    assert documents == set(CONVERTER)


def test_converted_pages_render_exactly_like_the_pdf(converted):
    """The converted PDF is rendered by the PDF path: same pixels as rendering that PDF directly."""
    src = prepare_source(formats_file("md/wiki.md"), "wiki.md", CFG)
    assert src.pdf is not None and src.pages == len(converted["md"].pages)
    direct = parse_document(src.pdf, "wiki.pdf", CFG)
    assert [p.image_hash for p in direct.pages] == [p.image_hash for p in converted["md"].pages]
