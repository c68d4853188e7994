"""The up-front check allows only known relationships out of an Office or OpenDocument file (issue 28):
each hostile file is built here (zipfile + XML strings) and refused with a 400 naming the part and
what is allowed; linked pictures and templates are let through with their links made dead."""

from __future__ import annotations

import io
import zipfile

import pytest

from mmrag.config import IngestConfig
from mmrag.errors import InvalidInput
from mmrag.ingest.convert.unlink import unlink_external
from mmrag.ingest.source import inspect_upload
from tests.ingest.office_fixtures import rezip
from tests.ingest.test_formats import formats_file

CFG = IngestConfig()
SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
SECRET = "file:///srv/mmrag/data/m.csv"


def _read(data: bytes, name: str) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.read(name).decode()


def _rel(rid: str, kind: str, target: str, external: bool = True) -> str:
    mode = ' TargetMode="External"' if external else ""
    uri = kind if kind.startswith("http") else f"{R}/{kind}"
    return f'<Relationship Id="{rid}" Type="{uri}" Target="{target}"{mode}/>'


def with_rels(base: bytes, rels_part: str, rels: str, parts: dict[str, str] | None = None) -> bytes:
    """``base`` with relationships added to ``rels_part`` (made when absent) and ``parts`` added."""
    with zipfile.ZipFile(io.BytesIO(base)) as z:
        names = set(z.namelist())
    replace, add = {}, {k: v.encode() for k, v in (parts or {}).items()}
    if rels_part in names:
        replace[rels_part] = _read(base, rels_part).replace("</Relationships>", rels + "</Relationships>").encode()
    else:
        add[rels_part] = f'<?xml version="1.0"?><Relationships xmlns="{PKG}">{rels}</Relationships>'.encode()
    return rezip(base, replace, add)


def xlsx_cell_formula(formula: str) -> bytes:
    xlsx = formats_file("xlsx/xlsx_01.xlsx")
    sheet = _read(xlsx, "xl/worksheets/sheet1.xml")
    cell = f'<c r="A1"><f>{formula}</f><v>0</v></c>'
    sheet = sheet.replace('<c r="A1" t="s"><v>0</v></c>', cell, 1)
    assert cell in sheet
    return rezip(xlsx, {"xl/worksheets/sheet1.xml": sheet.encode()})


def xlsx_external_link() -> bytes:
    link = (f'<externalLink xmlns="{SML}" xmlns:r="{R}"><externalBook r:id="rId1"><sheetNames><sheetName val="m"/>'
            '</sheetNames></externalBook></externalLink>')
    xlsx = with_rels(formats_file("xlsx/xlsx_01.xlsx"), "xl/externalLinks/_rels/externalLink1.xml.rels",
                     _rel("rId1", "externalLinkPath", SECRET), {"xl/externalLinks/externalLink1.xml": link})
    return with_rels(xlsx, "xl/_rels/workbook.xml.rels", _rel("rIdE1", "externalLink",
                                                              "externalLinks/externalLink1.xml", external=False))


def xlsx_connection() -> bytes:
    connections = (f'<connections xmlns="{SML}"><connection id="1" name="m" type="6" refreshOnLoad="1">'
                   '<textPr sourceFile="C:\\data\\m.csv"/></connection></connections>')
    return with_rels(formats_file("xlsx/xlsx_01.xlsx"), "xl/_rels/workbook.xml.rels",
                     _rel("rIdC1", "connections", "connections.xml", external=False),
                     {"xl/connections.xml": connections})


def xlsx_power_query() -> bytes:
    mashup = '<DataMashup xmlns="http://schemas.microsoft.com/DataMashup">AAAAAEUDAABQSwMEFAACAAgA</DataMashup>'
    return rezip(formats_file("xlsx/xlsx_01.xlsx"), {}, {"customXml/item1.xml": mashup.encode()})


def xlsx_defined_name(text: str) -> bytes:
    xlsx = formats_file("xlsx/xlsx_01.xlsx")
    book = _read(xlsx, "xl/workbook.xml")
    names = f'<definedNames><definedName name="m">{text}</definedName></definedNames>'
    book = book.replace("</sheets>", "</sheets>" + names, 1) if "<definedNames>" not in book else \
        book.replace("<definedNames>", names[:-len("</definedNames>")], 1)
    return rezip(xlsx, {"xl/workbook.xml": book.encode()})


def docx_rel(kind: str, target: str, external: bool = True) -> bytes:
    return with_rels(formats_file("docx/lorem_ipsum.docx"), "word/_rels/document.xml.rels",
                     _rel("rIdX9", kind, target, external))


def docx_settings(inner: str) -> bytes:
    docx = formats_file("docx/lorem_ipsum.docx")
    settings = _read(docx, "word/settings.xml")
    head, sep, rest = settings.partition("<w:zoom")
    return rezip(docx, {"word/settings.xml": (head + inner + sep + rest).encode()})


def pptx_media(kind: str, target: str) -> bytes:
    return with_rels(formats_file("pptx/powerpoint_sample.pptx"), "ppt/slides/_rels/slide1.xml.rels",
                     _rel("rIdV1", kind, target))


_OASIS = "urn:oasis:names:tc:opendocument:xmlns:"
ODF = {"text": f"{_OASIS}text:1.0", "draw": f"{_OASIS}drawing:1.0", "xlink": "http://www.w3.org/1999/xlink",
       "table": f"{_OASIS}table:1.0", "svg": f"{_OASIS}svg-compatible:1.0", "script": f"{_OASIS}script:1.0",
       "office": f"{_OASIS}office:1.0"}


def _declared(content: str) -> str:
    """content.xml with every prefix the attacks use declared."""
    for prefix, uri in ODF.items():
        if f"xmlns:{prefix}=" not in content:
            content = content.replace("<office:document-content ", f'<office:document-content xmlns:{prefix}="{uri}" ')
    return content


def ods_with(cell_xml: str) -> bytes:
    """odf_table_with_title_01.ods with ``cell_xml`` as the first row of its first table."""
    ods = formats_file("odf/odf_table_with_title_01.ods")
    content = _declared(_read(ods, "content.xml"))
    head, sep, rest = content.partition("<table:table-row")
    assert sep
    return rezip(ods, {"content.xml": (head + f"<table:table-row>{cell_xml}</table:table-row>" + sep + rest).encode()})


def odp_with(shape_xml: str) -> bytes:
    odp = formats_file("odf/odf_presentation_01.odp")
    content = _declared(_read(odp, "content.xml"))
    head, sep, rest = content.partition("</draw:page>")
    assert sep
    return rezip(odp, {"content.xml": (head + shape_xml + sep + rest).encode()})


def _cell(formula: str) -> str:
    return f'<table:table-cell table:formula="{formula}" office:value-type="float" office:value="0"/>'


def _frame(inner: str) -> str:
    return f'<draw:frame svg:width="4cm" svg:height="3cm" svg:x="1cm" svg:y="1cm">{inner}</draw:frame>'


ATTACKS = {
    "xlsx-external-link": (lambda: xlsx_external_link(), "externalLink", "xlsx"),
    "xlsx-formula-file-url": (lambda: xlsx_cell_formula(f"'{SECRET}'#$m.A1"), "file: URL", "xlsx"),
    "xlsx-formula-webservice": (lambda: xlsx_cell_formula('_xlfn.WEBSERVICE("file:///etc/passwd")'), "sheet1.xml",
                                "xlsx"),
    "xlsx-formula-webservice-web": (lambda: xlsx_cell_formula('_xlfn.WEBSERVICE("http://169.254.169.254/")'),
                                    "WEBSERVICE", "xlsx"),
    "xlsx-formula-filterxml": (lambda: xlsx_cell_formula('_xlfn.FILTERXML(B1,"//a")'), "FILTERXML", "xlsx"),
    "xlsx-formula-other-workbook": (lambda: xlsx_cell_formula("[1]Sheet1!$A$1"), "another workbook", "xlsx"),
    "xlsx-formula-path": (lambda: xlsx_cell_formula("'C:\\data\\[m.xlsx]Sheet1'!A1"), "another file", "xlsx"),
    "xlsx-defined-name": (lambda: xlsx_defined_name("[1]m!$A$1"), "workbook.xml", "xlsx"),
    "xlsx-connection": (xlsx_connection, "connections", "xlsx"),
    "xlsx-power-query": (xlsx_power_query, "DataMashup", "xlsx"),
    "docx-unknown-external": (lambda: docx_rel("http://example.org/2026/relationships/thing", "file:///etc/passwd"),
                              "thing", "docx"),
    "docx-hyperlink-file": (lambda: docx_rel("hyperlink", "file:///etc/passwd"), "hyperlink", "docx"),
    "docx-internal-escape": (lambda: docx_rel("image", "../../../../etc/passwd", external=False), "out of the file",
                             "docx"),
    "docx-mail-merge": (lambda: docx_settings('<w:mailMerge><w:mainDocumentType w:val="formLetters"/><w:dataType '
                                              'w:val="textFile"/><w:query w:val="SELECT * FROM /srv/m.csv"/>'
                                              "</w:mailMerge>"), "mail merge", "docx"),
    "docx-mail-merge-source": (lambda: with_rels(formats_file("docx/lorem_ipsum.docx"), "word/_rels/settings.xml.rels",
                                                 _rel("rId1", "mailMergeSource", SECRET)), "mailMergeSource", "docx"),
    "pptx-video": (lambda: pptx_media("video", "file:///srv/clip.mp4"), "video", "pptx"),
    "pptx-media": (lambda: pptx_media("http://schemas.microsoft.com/office/2007/relationships/media",
                                      "/srv/clip.mp4"), "media", "pptx"),
    "pptx-audio-web": (lambda: pptx_media("audio", "http://example.org/a.wav"), "audio", "pptx"),
    "ods-formula-file-url": (lambda: ods_with(_cell("of:=['file:///srv/m.ods'#$Sheet1.A1]")), "file: URL", "ods"),
    "ods-formula-webservice": (lambda: ods_with(_cell("of:=COM.MICROSOFT.WEBSERVICE(&quot;http://x/&quot;)")),
                               "WEBSERVICE", "ods"),
    "ods-database-source": (lambda: ods_with('<table:table-cell><table:database-source-sql table:database-name="m" '
                                             'table:sql-statement="SELECT 1"/></table:table-cell>'),
                            "database-source-sql", "ods"),
    "odp-linked-image-web": (lambda: odp_with(_frame('<draw:image xlink:href="http://example.org/x.png" '
                                                     'xlink:type="simple"/>')), "image", "odp"),
    "odp-plugin-media": (lambda: odp_with(_frame('<draw:plugin xlink:href="file:///srv/clip.mp4" '
                                                 'draw:mime-type="video/mp4"/>')), "plugin", "odp"),
    "odp-hyperlink-file": (lambda: odp_with('<draw:frame svg:width="4cm" svg:height="1cm" svg:x="1cm" svg:y="5cm">'
                                            '<draw:text-box><text:p><text:a xlink:href="file:///etc/passwd">x</text:a>'
                                            '</text:p></draw:text-box></draw:frame>'), "a linked", "odp"),
    "odp-event-listener-file": (lambda: odp_with('<office:event-listeners><script:event-listener script:language='
                                                 '"ooo:script" script:event-name="dom:click" xlink:href="file:///bin/x"/>'
                                                 "</office:event-listeners>"), "event-listener", "odp"),
}


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_each_outside_relationship_is_refused_saying_what_is_allowed(case):
    build, named, kind = ATTACKS[case]
    data = build()
    with pytest.raises(InvalidInput, match="includes another file") as caught:
        inspect_upload(data, f"x.{kind}", CFG)
    message = caught.value.message
    assert named in message and "allowed:" in message, message
    assert caught.value.code == "invalid_input" and caught.value.detail["reason"] == "external_reference"


def test_allowed_relationships_pass():
    """Web hyperlinks, mailto, in-package targets and ordinary formulas are not refused."""
    for data, kind in ((docx_rel("hyperlink", "https://example.org/a?b=1"), "docx"),
                       (docx_rel("hyperlink", "mailto:someone@example.org"), "docx"),
                       (docx_rel("image", "/word/media/none.png", external=False), "docx"),
                       (xlsx_cell_formula("SUM(Sheet2!A1:A3)+'My Sheet'!B2+Table1[[#This Row],[Qty]]"), "xlsx"),
                       (xlsx_cell_formula('IF(A2="x/y:z",1,0)'), "xlsx"),
                       (ods_with(_cell("of:=SUM([.A2:.A3])+['My Sheet'.B2]")), "ods"),
                       (odp_with('<draw:frame svg:width="4cm" svg:height="1cm" svg:x="1cm" svg:y="5cm"><draw:text-box>'
                                 '<text:p><text:a xlink:href="https://example.org/">x</text:a></text:p></draw:text-box>'
                                 "</draw:frame>"), "odp")):
        assert inspect_upload(data, f"ok.{kind}", CFG).name == kind


def test_a_template_link_is_made_dead_for_the_converter():
    """A DOCX attached to a local template (word_sample.docx of the formats corpus is one) and an ODT
    made from one are accepted; the converter's copy no longer names the template."""
    docx = formats_file("docx/word_sample.docx")
    assert "attachedTemplate" in _read(docx, "word/_rels/settings.xml.rels") and "file:///" in _read(
        docx, "word/_rels/settings.xml.rels")
    assert inspect_upload(docx, "word_sample.docx", CFG).name == "docx"
    rels = _read(unlink_external(docx), "word/_rels/settings.xml.rels")
    assert "attachedTemplate" in rels and "file:" not in rels and ".dotx" not in rels
    odt = formats_file("odf/text_document_01.odt")
    meta = _read(odt, "meta.xml").replace(
        "<office:meta>", '<office:meta><meta:template xlink:type="simple" xlink:actuate="onRequest" '
        'xlink:href="../../../srv/templates/letter.ott" xlink:title="letter"/>', 1)
    if "xmlns:xlink=" not in meta:
        meta = meta.replace("<office:document-meta ", f'<office:document-meta xmlns:xlink="{ODF["xlink"]}" ', 1)
    made = rezip(odt, {"meta.xml": meta.encode()})
    assert "letter.ott" in _read(made, "meta.xml") and inspect_upload(made, "t.odt", CFG).name == "odt"
    cleaned = _read(unlink_external(made), "meta.xml")
    assert "letter.ott" not in cleaned and "template" not in cleaned


def test_every_file_of_the_formats_corpus_still_passes():
    from tests.ingest.test_formats import FORMATS

    checked = 0
    for path in sorted(p for p in FORMATS.glob("*/*.*") if p.name != "LICENSE"):
        inspect_upload(path.read_bytes(), path.name, CFG)
        checked += 1
    assert checked >= 25
