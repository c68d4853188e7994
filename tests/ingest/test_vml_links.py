"""VML links in Office files are checked like the package's other references (issue 42): legacy VML
pictures, fills and shapes of a DOCX, XLSX or PPTX that name a local file or a host, directly (``src``,
``o:href``, ``o:althref``, a shape's ``href``) or through an external hyperlink relationship, and XLSX
form-control formulas naming another workbook, are refused with a 400 naming the part and what is
allowed; VML pictures inside the package, linked pictures (emptied for the converter) and inert
references pass. Each file is built here as Office writes it (a ZIP of XML parts)."""

from __future__ import annotations

import base64

import pytest

from mmrag.config import IngestConfig
from mmrag.errors import InvalidInput
from mmrag.ingest.convert.unlink import unlink_external
from mmrag.ingest.source import inspect_upload
from tests.ingest.local_refs import docx_with, vml_picture
from tests.ingest.office_fixtures import rezip
from tests.ingest.test_formats import formats_file
from tests.ingest.test_package_relationships import _read, _rel, with_rels

CFG = IngestConfig()
V, OFFICE = "urn:schemas-microsoft-com:vml", "urn:schemas-microsoft-com:office:office"
X = "urn:schemas-microsoft-com:office:excel"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
LOCAL = "file:///srv/mmrag/data/keys.png"
HOST = "http://169.254.169.254/latest/meta-data.png"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


def docx_vml(inner: str, rels: str = "", shape: str = "shape") -> bytes:
    return docx_with(vml_picture(inner, shape), rels)


def docx_shape(attrs: str, element: str = "shape") -> bytes:
    """A VML shape (or ``v:image``) whose own attributes are ``attrs``."""
    return docx_with(f'<w:p><w:r><w:pict xmlns:v="{V}" xmlns:o="{OFFICE}"><v:{element} id="s1" style="width:90pt;'
                     f'height:60pt" {attrs}/></w:pict></w:r></w:p>')


def docx_blip_link(target_rel: str) -> bytes:
    """word_sample.docx whose duck picture (DrawingML) loads from relationship rIdX1 instead of its media part."""
    docx = docx_with("", target_rel)
    doc = _read(docx, "word/document.xml").replace('r:embed="rId7"', 'r:link="rIdX1"')
    return rezip(docx, {"word/document.xml": doc.encode()})


def vml_drawing(body: str) -> str:
    return f'<xml xmlns:v="{V}" xmlns:o="{OFFICE}" xmlns:x="{X}" xmlns:r="{R}">{body}</xml>'


def _ext(rid: str, kind: str, target: str) -> str:
    return _rel(rid, kind, target)


def xlsx_vml(body: str, rels: str = "", part: str = "xl/drawings/vmlDrawingHF1.vml") -> bytes:
    """xlsx_01.xlsx with a VML drawing part (a header/footer picture, a form control) and its rels."""
    xlsx = rezip(formats_file("xlsx/xlsx_01.xlsx"), {}, {part: vml_drawing(body).encode()})
    xlsx = with_rels(xlsx, "xl/worksheets/_rels/sheet1.xml.rels", _rel("rIdHF", "vmlDrawing", "../" + part[3:],
                                                                       external=False))
    if rels:
        folder, name = part.rsplit("/", 1)
        xlsx = with_rels(xlsx, f"{folder}/_rels/{name}.rels", rels)
    return xlsx


def pptx_vml(body: str, rels: str = "") -> bytes:
    """powerpoint_sample.pptx with an OLE object's preview drawing (``ppt/drawings/vmlDrawing1.vml``)."""
    pptx = rezip(formats_file("pptx/powerpoint_sample.pptx"), {}, {"ppt/drawings/vmlDrawing1.vml":
                                                                   vml_drawing(body).encode()})
    pptx = with_rels(pptx, "ppt/slides/_rels/slide1.xml.rels", _rel("rIdVD", "vmlDrawing",
                                                                    "../drawings/vmlDrawing1.vml", external=False))
    return with_rels(pptx, "ppt/drawings/_rels/vmlDrawing1.vml.rels", rels) if rels else pptx


def _picture(attrs: str) -> str:
    return (f'<v:shape id="_x0000_s1025" type="#_x0000_t75" style="width:90pt;height:60pt"><v:imagedata {attrs}/>'
            "</v:shape>")


REFUSED = {
    "docx-imagedata-src-file": (lambda: docx_vml(f'<v:imagedata src="{LOCAL}"/>'), "v:imagedata src", "docx"),
    "docx-imagedata-src-path": (lambda: docx_vml('<v:imagedata src="/srv/mmrag/data/keys.png"/>'), "keys.png", "docx"),
    "docx-imagedata-src-relative": (lambda: docx_vml('<v:imagedata src="../../../srv/x.png"/>'), "v:imagedata", "docx"),
    "docx-imagedata-src-host": (lambda: docx_vml(f'<v:imagedata src="{HOST}"/>'), "169.254.169.254", "docx"),
    "docx-imagedata-href": (lambda: docx_vml(f'<v:imagedata o:href="{LOCAL}" o:title=""/>'), "o:href", "docx"),
    "docx-imagedata-althref-drive": (lambda: docx_vml('<v:imagedata o:althref="C:\\Users\\a\\x.png"/>'), "o:althref",
                                     "docx"),
    "docx-fill-src-unc": (lambda: docx_vml('<v:fill src="\\\\files\\share\\x.png" type="frame"/>', shape="rect"),
                          "v:fill src", "docx"),
    "docx-image-src": (lambda: docx_shape(f'src="{LOCAL}"', "image"), "v:image src", "docx"),
    "docx-shape-hyperlink-file": (lambda: docx_shape('href="file:///etc/passwd"'), "v:shape href", "docx"),
    "docx-imagedata-from-hyperlink": (lambda: docx_vml('<v:imagedata r:id="rIdX1"/>', _ext("rIdX1", "hyperlink", HOST)),
                                      "'hyperlink' relationship", "docx"),
    "docx-blip-from-hyperlink": (lambda: docx_blip_link(_ext("rIdX1", "hyperlink", HOST)), "a:blip r:link", "docx"),
    "xlsx-header-picture-src": (lambda: xlsx_vml(_picture(f'src="{LOCAL}" o:title="logo"')), "vmlDrawingHF1.vml",
                                "xlsx"),
    "xlsx-header-picture-from-hyperlink": (lambda: xlsx_vml(_picture('o:relid="rId1" o:title="logo"'),
                                                            _ext("rId1", "hyperlink", HOST)), "o:relid", "xlsx"),
    "xlsx-form-control-other-workbook": (lambda: xlsx_vml(
        '<v:shape id="_x0000_s1026" type="#_x0000_t201"><x:ClientData ObjectType="Drop"><x:FmlaRange>[1]Sheet1!$A$1:'
        '$A$9</x:FmlaRange><x:FmlaLink>$B$1</x:FmlaLink></x:ClientData></v:shape>', part="xl/drawings/vmlDrawing1.vml"),
        "another workbook", "xlsx"),
    "pptx-ole-preview-src": (lambda: pptx_vml(_picture(f'src="{LOCAL}"')), "vmlDrawing1.vml", "pptx"),
    "pptx-ole-preview-from-hyperlink": (lambda: pptx_vml(_picture('o:relid="rId1"'), _ext("rId1", "hyperlink", HOST)),
                                        "o:relid", "pptx"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_vml_link_out_of_the_file_is_refused_saying_what_is_allowed(case):
    build, named, kind = REFUSED[case]
    with pytest.raises(InvalidInput, match="includes another file") as caught:
        inspect_upload(build(), f"x.{kind}", CFG)
    message = caught.value.message
    assert named in message and "allowed:" in message, message
    assert caught.value.code == "invalid_input" and caught.value.detail["reason"] == "external_reference"


def test_vml_inside_the_file_and_inert_references_pass():
    """A VML picture of a part inside the file, data: and cid: (Outlook's) sources, a web hyperlink on a
    shape, header pictures by o:relid, a form control on this workbook's cells: all accepted."""
    media = '<Relationship Id="rIdM1" Type="' + R + '/image" Target="media/pic.png"/>'
    header = '<Relationship Id="rId1" Type="' + R + '/image" Target="../media/image1.png"/>'
    for data, kind in (
        (docx_vml('<v:imagedata r:id="rIdM1" o:title=""/>', media), "docx"),
        (docx_vml('<v:imagedata r:id="rIdM1" o:href="cid:image001.png@01DA5D2B.8A1E3F70"/>', media), "docx"),
        (docx_vml(f'<v:imagedata src="data:image/png;base64,{PNG}"/>'), "docx"),
        (docx_vml('<v:fill r:id="rIdM1" type="frame"/>', media, shape="rect"), "docx"),
        (docx_shape('href="https://example.org/report"'), "docx"),
        (xlsx_vml(_picture('o:relid="rId1" o:title="logo"'), header), "xlsx"),
        (xlsx_vml('<v:shape id="_x0000_s1026"><x:ClientData ObjectType="Drop"><x:FmlaRange>Sheet1!$A$1:$A$9'
                  '</x:FmlaRange></x:ClientData></v:shape>', part="xl/drawings/vmlDrawing1.vml"), "xlsx"),
        (pptx_vml(_picture('o:relid="rId1"'), '<Relationship Id="rId1" Type="' + R + '/image" '
                                              'Target="../media/image1.png"/>'), "pptx"),
    ):
        assert inspect_upload(data, f"ok.{kind}", CFG).name == kind


def test_a_vml_picture_linked_to_a_file_passes_with_its_link_made_dead():
    """A VML picture of an external image relationship is a linked picture, like DrawingML's: accepted,
    and the converter's copy no longer names the file."""
    docx = docx_vml('<v:imagedata r:id="rIdX1" o:title=""/>', _ext("rIdX1", "image", LOCAL))
    assert inspect_upload(docx, "linked.docx", CFG).name == "docx"
    rels = _read(unlink_external(docx), "word/_rels/document.xml.rels")
    assert 'Id="rIdX1"' in rels and "keys.png" not in rels
