"""Office files built for the bad-input tests: macros, bombs, encrypted, huge sheets, many attachments."""

from __future__ import annotations

import io
import zipfile
from email.message import EmailMessage
from pathlib import Path

_MANIFEST_NS = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
_BASIC_MODULE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">
Sub Main
  Open "{target}" For Output As #1
  Print #1, "the macro ran"
  Close #1
End Sub
</script:module>
"""
_LIBRARY = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE library:library PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "library.dtd">
<library:library xmlns:library="http://openoffice.org/2000/library" library:name="Standard" library:readonly="false"
 library:passwordprotected="false"><library:element library:name="Module1"/></library:library>
"""
_LIBRARIES = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE library:libraries PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "libraries.dtd">
<library:libraries xmlns:library="http://openoffice.org/2000/library" xmlns:xlink="http://www.w3.org/1999/xlink">
<library:library library:name="Standard" library:link="false"/></library:libraries>
"""
_ON_LOAD = ('<office:scripts><office:event-listeners><script:event-listener script:language="ooo:script" '
            'script:event-name="dom:load" xlink:href="vnd.sun.star.script:Standard.Module1.Main?language=Basic'
            '&amp;location=document" xlink:type="simple"/></office:event-listeners></office:scripts>')


def rezip(src: bytes, replace: dict[str, bytes], add: dict[str, bytes] | None = None) -> bytes:
    """A copy of a ZIP container with some entries replaced and some added (``mimetype`` stays first, stored)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = replace.get(info.filename, zin.read(info.filename))
            zout.writestr(info, data, compress_type=info.compress_type)
        for name, data in (add or {}).items():
            zout.writestr(name, data)
    return out.getvalue()


def odt_with_onload_macro(odt: bytes, target: Path) -> bytes:
    """An ODT whose Basic macro, bound to the document's load event, would write ``target``."""
    with zipfile.ZipFile(io.BytesIO(odt)) as z:
        content = z.read("content.xml").decode()
        manifest = z.read("META-INF/manifest.xml").decode()
    if "xmlns:script=" not in content:
        content = content.replace("<office:document-content ", '<office:document-content '
                                  'xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" ', 1)
    if "xmlns:xlink=" not in content:
        content = content.replace("<office:document-content ", '<office:document-content '
                                  'xmlns:xlink="http://www.w3.org/1999/xlink" ', 1)
    head, sep, rest = content.partition("<office:font-face-decls")
    content = head + _ON_LOAD + sep + rest if sep else content.replace("<office:body>", _ON_LOAD + "<office:body>")
    entries = "".join(f'<manifest:file-entry manifest:full-path="{p}" manifest:media-type="text/xml"/>'
                      for p in ("Basic/script-lc.xml", "Basic/Standard/script-lb.xml", "Basic/Standard/Module1.xml"))
    manifest = manifest.replace("</manifest:manifest>", entries + "</manifest:manifest>")
    return rezip(odt, {"content.xml": content.encode(), "META-INF/manifest.xml": manifest.encode()}, {
        "Basic/script-lc.xml": _LIBRARIES.encode(), "Basic/Standard/script-lb.xml": _LIBRARY.encode(),
        "Basic/Standard/Module1.xml": _BASIC_MODULE.format(target=target).encode()})


def docm_from_docx(docx: bytes) -> bytes:
    """A DOCM: the macro-enabled content type and a VBA project part (opaque bytes; never executed)."""
    with zipfile.ZipFile(io.BytesIO(docx)) as z:
        types = z.read("[Content_Types].xml").decode()
    types = types.replace("application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                          "application/vnd.ms-word.document.macroEnabled.main+xml")
    types = types.replace("</Types>", '<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/>'
                          "</Types>")
    vba = b"\xd0\xcf\x11\xe0" + bytes(508)
    return rezip(docx, {"[Content_Types].xml": types.encode()}, {"word/vbaProject.bin": vba})


def xml_bomb_docx(docx: bytes) -> bytes:
    lol = "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    doc = (f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY lol0 "lol">{lol}]>'
           '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
           "<w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>")
    return rezip(docx, {"word/document.xml": doc.encode()})


def zip_bomb_docx(size: int = 64 << 20) -> bytes:
    """A DOCX-shaped container whose document part inflates ~1000:1."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", b"\x00" * size)
    return out.getvalue()


def many_entries_zip(n: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        for i in range(n):
            z.writestr(f"word/media/e{i}.txt", b"x")
    return out.getvalue()


def huge_sheet_xlsx(rows: int) -> bytes:
    """A minimal XLSX whose worksheet declares ``rows`` rows (first and last rows present)."""
    sheet = (f'<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             f'<dimension ref="A1:B{rows}"/><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row>'
             f'<row r="{rows}"><c r="A{rows}"><v>1</v></c></row></sheetData></worksheet>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
                   'package/2006/content-types"/>')
        z.writestr("xl/workbook.xml", "<workbook/>")
        z.writestr("xl/worksheets/sheet1.xml", sheet)
    return out.getvalue()


def email_with_attachments(n: int, body: str = "Quarterly numbers attached.") -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "Alice <alice@example.com>", "bob@example.com", "Many files"
    msg["Date"] = "Tue, 01 Dec 2026 08:00:00 +0000"
    msg.set_content(body)
    for i in range(n):
        msg.add_attachment(f"note {i}: the shipment code is ZX{i:04d}".encode(), maintype="text", subtype="plain",
                           filename=f"note{i}.txt")
    return msg.as_bytes()
