"""Crafted uploads that try to pull a local file into a corpus, by every means we know of.

:func:`plant_markers` writes the bait: a magenta PNG, an SVG and a text file, each holding a marker
string, under a folder of the test. Every builder returns bytes naming one of them by an absolute
path, a ``file://`` URL or a relative path climbing from wherever the converter runs. A converter
that follows the reference brings the marker text into the text layer or magenta into the pixels.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

from PIL import Image

from tests.ingest.office_fixtures import rezip
from tests.ingest.test_formats import formats_file

MARKER = "ZQXLOCALSECRET"  # never in a page's text
MAGENTA = (255, 0, 255)  # never in a page's pixels


@dataclass(frozen=True)
class Markers:
    png: Path
    svg: Path
    txt: Path
    html: Path

    def rel(self, path: Path) -> str:
        """A relative path to ``path`` from any folder (climbs to / first)."""
        return "../" * 12 + str(path).lstrip("/")


def plant_markers(folder: Path) -> Markers:
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / "marker.png"
    Image.new("RGB", (300, 200), MAGENTA).save(png)
    svg = folder / "marker.svg"
    svg.write_text(f'<svg xmlns="http://www.w3.org/2000/svg" width="700" height="120"><rect width="700" height="120" '
                   f'fill="#ff00ff"/><text x="10" y="70" font-size="22">{MARKER}</text></svg>')
    txt = folder / "marker.txt"
    txt.write_text(f"{MARKER} text of a local file\n")
    html = folder / "marker.html"
    html.write_text(f"<html><body><p>{MARKER} from a local page</p><img src='{png.as_uri()}'></body></html>")
    for path in (png, svg, txt, html):
        path.chmod(0o644)
    return Markers(png, svg, txt, html)


# --- RTF ---------------------------------------------------------------------------------------

def rtf(body: str) -> bytes:
    return ("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\\f0 Visible words before " + body
            + " and after.\\par}").encode()


def rtf_field(instruction: str) -> bytes:
    escaped = instruction.replace("\\", "\\\\")
    return rtf("{\\field{\\*\\fldinst " + escaped + "}{\\fldrslt cached}}")


def rtf_attacks(m: Markers) -> dict[str, bytes]:
    return {
        "rtf-includepicture-png": rtf_field(f'INCLUDEPICTURE "{m.png}" \\d'),
        "rtf-includepicture-svg": rtf_field(f'INCLUDEPICTURE "{m.svg}" \\d'),
        "rtf-includepicture-url": rtf_field(f'INCLUDEPICTURE "{m.png.as_uri()}" \\d'),
        "rtf-includepicture-relative": rtf_field(f'INCLUDEPICTURE "{m.rel(m.png)}" \\d'),
        "rtf-includepicture-escaped": rtf("{\\field{\\*\\fldinst INCLUDE\\'50ICTURE \"" + str(m.svg) + "\" \\\\d}"
                                          "{\\fldrslt cached}}"),
        "rtf-includetext": rtf_field(f'INCLUDETEXT "{m.txt}"'),
        "rtf-objlink": rtf("{\\object\\objlink\\objupdate{\\*\\objclass Package}{\\*\\objdata 01050000}"
                           "{\\result {\\fldrslt linked}}}" + f"{{\\*\\linkself {m.txt}}}"),
    }


# --- DOCX --------------------------------------------------------------------------------------

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def docx_with(body_xml: str, rels: str = "", extra: dict[str, bytes] | None = None,
               content_types: str = "") -> bytes:
    """word_sample.docx with ``body_xml`` as the first paragraphs and ``rels`` added."""
    base = formats_file("docx/word_sample.docx")
    with zipfile.ZipFile(io.BytesIO(base)) as z:
        doc = z.read("word/document.xml").decode()
        rel_xml = z.read("word/_rels/document.xml.rels").decode()
        types = z.read("[Content_Types].xml").decode()
    doc = doc.replace("<w:body>", "<w:body>" + body_xml, 1)
    rel_xml = rel_xml.replace("</Relationships>", rels + "</Relationships>")
    types = types.replace("</Types>", content_types + "</Types>")
    return rezip(base, {"word/document.xml": doc.encode(), "word/_rels/document.xml.rels": rel_xml.encode(),
                        "[Content_Types].xml": types.encode()}, extra)


def _p(inner: str) -> str:
    return f"<w:p><w:r><w:t xml:space=\"preserve\">Visible words </w:t></w:r>{inner}</w:p>"


def _complex_field(instruction: str) -> str:
    half = len(instruction) // 2  # Word splits instructions over runs; so do we
    return ('<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
            f'<w:r><w:instrText xml:space="preserve">{instruction[:half]}</w:instrText></w:r>'
            f'<w:r><w:instrText xml:space="preserve">{instruction[half:]}</w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>cached</w:t></w:r>'
            '<w:r><w:fldChar w:fldCharType="end"/></w:r>')


def _ext_rel(rid: str, kind: str, target: str) -> str:
    return f'<Relationship Id="{rid}" Type="{_REL}/{kind}" Target="{target}" TargetMode="External"/>'


_VML = ('xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" '
        f'xmlns:r="{_REL}"')
_PICTURE_TYPE = ('<v:shapetype id="_x0000_t75" coordsize="21600,21600" o:spt="75" o:preferrelative="t" '
                 'path="m@4@5l@4@11@9@11@9@5xe" filled="f" stroked="f"><v:stroke joinstyle="miter"/>'
                 '<v:path o:extrusionok="f" gradientshapeok="t" o:connecttype="rect"/></v:shapetype>')


def vml_picture(inner: str, shape: str = "shape") -> str:
    """A paragraph holding a legacy VML picture (``w:pict``) as Word writes one, with ``inner`` in its shape."""
    return _p(f'<w:r><w:pict {_VML}>{_PICTURE_TYPE}<v:{shape} id="_x0000_i1025" type="#_x0000_t75" '
              f'style="width:200pt;height:100pt">{inner}</v:{shape}></w:pict></w:r>')


def docx_attacks(m: Markers) -> dict[str, bytes]:
    linked = docx_with("", _ext_rel("rIdX1", "image", m.png.as_uri()))
    with zipfile.ZipFile(io.BytesIO(linked)) as z:  # the duck picture, now a link to the marker
        doc = z.read("word/document.xml").decode().replace('r:embed="rId7"', 'r:link="rIdX1"')
    linked = rezip(linked, {"word/document.xml": doc.encode()})
    ole = ('<w:r><w:object><v:shape xmlns:v="urn:schemas-microsoft-com:vml" id="o1" style="width:200pt;height:100pt">'
           '<v:imagedata xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:id="rIdX3"/>'
           '</v:shape><o:OLEObject xmlns:o="urn:schemas-microsoft-com:office:office" '
           'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" Type="Link" '
           'ProgID="Package" ShapeID="o1" r:id="rIdX2" UpdateMode="Always"/></w:object></w:r>')
    chunk = f"<html><body><p>{MARKER} in a chunk</p><img src='{m.png.as_uri()}'></body></html>".encode()
    return {
        "docx-fldsimple-includepicture": docx_with(_p(f'<w:fldSimple w:instr=\' INCLUDEPICTURE "{m.png}" \\d \'>'
                                                       "<w:r><w:t>cached</w:t></w:r></w:fldSimple>")),
        "docx-includepicture-svg-url": docx_with(_p(_complex_field(f' INCLUDEPICTURE "{m.svg.as_uri()}" \\d '))),
        "docx-includetext-relative": docx_with(_p(_complex_field(f' INCLUDETEXT "{m.rel(m.txt)}" '))),
        "docx-linked-image": linked,
        "docx-ole-link": docx_with(_p(ole), _ext_rel("rIdX2", "oleObject", m.txt.as_uri())
                                    + _ext_rel("rIdX3", "image", str(m.png))),
        "docx-subdocument": docx_with(_p(f'<w:subDoc xmlns:r="{_REL}" r:id="rIdX4"/>'),
                                       _ext_rel("rIdX4", "subDocument", m.html.as_uri())),
        "docx-vml-imagedata-src": docx_with(vml_picture(f'<v:imagedata src="{m.png.as_uri()}" o:title=""/>')),
        "docx-vml-imagedata-href-path": docx_with(vml_picture(f'<v:imagedata o:href="{m.png}" o:title=""/>')),
        "docx-vml-fill-src-relative": docx_with(vml_picture(f'<v:fill src="{m.rel(m.png)}" type="frame"/>', "rect")),
        "docx-altchunk": docx_with(f'<w:altChunk xmlns:r="{_REL}" r:id="rIdX5"/>',
                                    f'<Relationship Id="rIdX5" Type="{_REL}/aFChunk" Target="chunk.html"/>',
                                    {"word/chunk.html": chunk},
                                    '<Override PartName="/word/chunk.html" ContentType="text/html"/>'),
    }


# --- ODT ---------------------------------------------------------------------------------------

def _odt_with(body_xml: str) -> bytes:
    base = formats_file("odf/text_document_01.odt")
    with zipfile.ZipFile(io.BytesIO(base)) as z:
        content = z.read("content.xml").decode()
    head, sep, rest = content.partition("<office:text")
    close = rest.index(">") + 1
    content = head + sep + rest[:close] + body_xml + rest[close:]
    for prefix, uri in (("xlink", "http://www.w3.org/1999/xlink"),
                        ("draw", "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"),
                        ("svg", "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0")):
        if f"xmlns:{prefix}=" not in content:
            content = content.replace("<office:document-content ",
                                      f'<office:document-content xmlns:{prefix}="{uri}" ', 1)
    return rezip(base, {"content.xml": content.encode()})


def _odt_image(href: str) -> str:
    return ('<text:p>Visible words <draw:frame draw:name="f" text:anchor-type="as-char" svg:width="6cm" '
            f'svg:height="4cm"><draw:image xlink:href="{href}" xlink:type="simple" xlink:show="embed" '
            'xlink:actuate="onLoad"/></draw:frame> and after.</text:p>')


def odt_attacks(m: Markers) -> dict[str, bytes]:
    section = ('<text:section text:name="s1"><text:section-source xlink:href="{}" xlink:type="simple" '
               'text:filter-name="HTML (StarWriter)"/><text:p>cached</text:p></text:section>')
    return {
        "odt-linked-image-absolute": _odt_with(_odt_image(str(m.png))),
        "odt-linked-image-url": _odt_with(_odt_image(m.svg.as_uri())),
        "odt-linked-image-relative": _odt_with(_odt_image(m.rel(m.png))),
        "odt-linked-section": _odt_with(section.format(m.html.as_uri())),
        "odt-linked-object": _odt_with('<text:p><draw:frame draw:name="o" svg:width="6cm" svg:height="4cm">'
                                       f'<draw:object xlink:href="{m.rel(m.html)}" xlink:type="simple"/>'
                                       '</draw:frame></text:p>'),
    }


# --- text kinds, EPUB, EML ----------------------------------------------------------------------

def html_attacks(m: Markers) -> dict[str, bytes]:
    page = ("<!doctype html><html><head><link rel='stylesheet' href='{css}'><style>@import '{css}'; "
            "body {{ background: url('{png}') }}</style></head><body><p>Visible words</p>"
            "<img src='{png}'><img src='{abs}'><img src='{rel}'><iframe src='{html}'></iframe>"
            "<object data='{svg}'></object><svg><image href='{png}' width='100' height='100'/></svg>"
            "<embed src='{txt}'></body></html>")
    css = m.png.with_suffix(".css")
    css.write_text(f"body::before {{ content: '{MARKER}' }}")
    return {"html-every-reference": page.format(css=css.as_uri(), png=m.png.as_uri(), abs=m.png, rel=m.rel(m.png),
                                                html=m.html.as_uri(), svg=m.svg.as_uri(), txt=m.txt).encode()}


def md_attacks(m: Markers) -> dict[str, bytes]:
    return {"md-every-reference": (f"# Visible words\n\n![a]({m.png})\n\n![b]({m.png.as_uri()})\n\n"
                                   f"![c]({m.rel(m.png)})\n\n<img src=\"{m.svg.as_uri()}\">\n\n"
                                   f"<iframe src=\"{m.html}\"></iframe>\n").encode()}


def epub(xhtml: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:'
                   'tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type='
                   '"application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version='
                   '"3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>T'
                   '</dc:title><dc:identifier id="id">x</dc:identifier><dc:language>en</dc:language></metadata>'
                   '<manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest>'
                   '<spine><itemref idref="c"/></spine></package>')
        z.writestr("OEBPS/c.xhtml", xhtml)
    return out.getvalue()


def epub_attacks(m: Markers) -> dict[str, bytes]:
    css = m.png.with_suffix(".css")
    css.write_text(f"body::before {{ content: '{MARKER}' }}")
    body = (f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>T</title>'
            f'<link rel="stylesheet" href="{css.as_uri()}"/></head><body><p>Visible words</p>'
            f'<img src="{m.png}"/><img src="{m.png.as_uri()}"/><img src="{m.rel(m.png)}"/>'
            f'<img src="{m.svg.as_uri()}"/></body></html>')
    return {"epub-every-reference": epub(body)}


def eml_attacks(m: Markers) -> dict[str, bytes]:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "a@example.org", "b@example.org", "Visible words"
    msg.set_content("Visible words in the text part.")
    msg.add_alternative(f"<p>Visible words</p><img src='{m.png.as_uri()}'><img src='{m.png}'>", subtype="html")
    msg.add_attachment(rtf_field(f'INCLUDEPICTURE "{m.svg}" \\d'), maintype="application", subtype="rtf",
                       filename="note.rtf")
    return {"eml-html-and-rtf-attachment": msg.as_bytes()}


FILENAMES = {"rtf": "x.rtf", "docx": "x.docx", "odt": "x.odt", "doc": "x.doc", "html": "x.html", "md": "x.md",
             "epub": "x.epub", "eml": "x.eml"}


def all_attacks(m: Markers) -> dict[str, bytes]:
    return {**rtf_attacks(m), **docx_attacks(m), **odt_attacks(m), **html_attacks(m), **md_attacks(m),
            **epub_attacks(m), **eml_attacks(m)}


def filename(case: str) -> str:
    return FILENAMES[case.split("-", 1)[0]]
