"""ZIP/XML checks that cannot be sidestepped (issue 21): parts decoded as their declaration says
(UTF-16 too), every entry whatever its name, rows counted rather than read from ``<dimension>``,
ODS included; and fields that include local files refused up front, web links not."""

from __future__ import annotations

import io
import zipfile

import pytest

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, InvalidInput, TooLarge
from mmrag.ingest.convert.references import check_rtf, field_type
from mmrag.ingest.convert.unlink import unlink_external
from mmrag.ingest.source import inspect_upload
from tests.ingest.office_fixtures import rezip
from tests.ingest.test_formats import formats_file

CFG = IngestConfig(max_sheet_rows=1000)
BOMB = '<?xml version="1.0" encoding="{enc}"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]><w>&b;</w>'


def _docx_part(name: str, data: bytes) -> bytes:
    docx = formats_file("docx/word_sample.docx")
    with zipfile.ZipFile(io.BytesIO(docx)) as z:
        exists = name in z.namelist()
    return rezip(docx, {name: data} if exists else {}, None if exists else {name: data})


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_entities_in_a_utf16_part_are_refused(encoding):
    declared = "UTF-16"
    text = BOMB.format(enc=declared)
    data = text.encode(encoding) if encoding != "utf-16" else text.encode("utf-16")  # with and without a BOM
    with pytest.raises(CorruptDocument, match="entities"):
        inspect_upload(_docx_part("word/document.xml", data), "bomb.docx", CFG)


def test_every_entry_is_checked_whatever_its_name():
    with pytest.raises(CorruptDocument, match="entities"):
        inspect_upload(_docx_part("word/media/notes.bin", BOMB.format(enc="UTF-8").encode()), "odd.docx", CFG)


def test_a_part_in_an_encoding_the_checks_cannot_read_is_refused():
    part = b'<?xml version="1.0" encoding="Shift_JIS"?><w:document xmlns:w="x"/>'
    with pytest.raises(CorruptDocument, match="encoding"):
        inspect_upload(_docx_part("word/document.xml", part), "sjis.docx", CFG)


def test_an_including_field_in_a_utf16_part_is_refused():
    docx = formats_file("docx/word_sample.docx")
    with zipfile.ZipFile(io.BytesIO(docx)) as z:
        doc = z.read("word/document.xml").decode()
    field = ('<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> INCLUDE&#80;ICTURE '
             '"/etc/hostname" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>')
    doc = doc.replace('encoding="UTF-8"', 'encoding="UTF-16"').replace("<w:body>", "<w:body>" + field, 1)
    with pytest.raises(InvalidInput, match="INCLUDEPICTURE"):
        inspect_upload(rezip(docx, {"word/document.xml": doc.encode("utf-16")}), "u16.docx", CFG)


def _xlsx_rows(rows: int, dimension: str) -> bytes:
    xlsx = formats_file("xlsx/xlsx_01.xlsx")
    body = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>v{i}</t></is></c></row>' for i in range(1, rows + 1))
    sheet = ('<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
             f'spreadsheetml/2006/main"><dimension ref="{dimension}"/><sheetData>{body}</sheetData></worksheet>')
    with zipfile.ZipFile(io.BytesIO(xlsx)) as z:
        name = next(n for n in z.namelist() if n.startswith("xl/worksheets/") and n.endswith(".xml"))
    return rezip(xlsx, {name: sheet.encode()})


def test_sheet_rows_are_counted_not_read_from_a_lying_dimension():
    with pytest.raises(TooLarge, match="MAX_SHEET_ROWS"):
        inspect_upload(_xlsx_rows(1200, "A1:A2"), "liar.xlsx", CFG)
    assert inspect_upload(_xlsx_rows(900, "A1:A999999"), "honest.xlsx", CFG).name == "xlsx"


def _ods_rows(repeat: int, filled: bool) -> bytes:
    ods = formats_file("odf/odf_table_with_title_01.ods")
    cell = ('<table:table-cell office:value-type="string"><text:p>x</text:p></table:table-cell>' if filled
            else "<table:table-cell/>")
    row = f'<table:table-row table:number-rows-repeated="{repeat}">{cell}</table:table-row>'
    with zipfile.ZipFile(io.BytesIO(ods)) as z:
        content = z.read("content.xml").decode()
    head, sep, rest = content.partition("</table:table>")
    return rezip(ods, {"content.xml": (head + row + sep + rest).encode()})


def test_ods_rows_count_their_repeats_when_they_hold_something():
    with pytest.raises(TooLarge, match="MAX_SHEET_ROWS"):
        inspect_upload(_ods_rows(1_000_000, filled=True), "repeated.ods", CFG)
    assert inspect_upload(_ods_rows(1_000_000, filled=False), "trailing.ods", CFG).name == "ods"  # empty rows


def test_fields_with_local_targets_are_refused_web_links_are_not():
    assert field_type('INCLUDEPICTURE "/etc/passwd" \\d') == "INCLUDEPICTURE"
    assert field_type(' INCLUDETEXT "C:\\\\secret.docx" ') == "INCLUDETEXT"
    assert field_type('INCLUDEPICTURE "file:///srv/x.png"') == "INCLUDEPICTURE"
    assert field_type('includepicture "x.png"') == "INCLUDEPICTURE"
    assert field_type('INCLUDEPICTURE "https://example.org/logo.png" \\* MERGEFORMATINET') is None
    assert field_type('DDEAUTO "cmd" "/c calc"') == "DDEAUTO"
    assert field_type('HYPERLINK "file:///srv/x"') is None and field_type("PAGE") is None
    with pytest.raises(InvalidInput, match="objlink"):
        check_rtf(b"{\\rtf1 {\\object\\objlink{\\*\\objdata 00}}}", "x.rtf")
    check_rtf(b"{\\rtf1 {\\field{\\*\\fldinst HYPERLINK \"http://x\"}{\\fldrslt x}}}", "ok.rtf")


def test_every_file_of_the_formats_corpus_passes_the_checks():
    from tests.ingest.test_formats import FORMATS

    for path in sorted(p for p in FORMATS.glob("*/*.*") if p.name != "LICENSE"):
        inspect_upload(path.read_bytes(), path.name, IngestConfig())


def test_a_picture_linked_to_a_local_file_is_unlinked_for_the_converter():
    pptx = formats_file("pptx/powerpoint_with_image.pptx")
    unlinked = unlink_external(pptx)
    with zipfile.ZipFile(io.BytesIO(unlinked)) as z:
        rels = z.read("ppt/slides/_rels/slide1.xml.rels").decode()
    assert "/Users/ceb" not in rels and 'TargetMode="External"' in rels
    assert unlink_external(formats_file("docx/lorem_ipsum.docx")) == formats_file("docx/lorem_ipsum.docx")  # no links
