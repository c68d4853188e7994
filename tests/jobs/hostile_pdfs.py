"""Hostile PDFs of issue 28, written object by object (a few KB each): drawing them is the attack."""

from __future__ import annotations

import zlib


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (object i+1 is ``objects[i]``; 1 is the catalog) with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<< " + dictionary + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def nested_xobjects(levels: int = 12, fanout: int = 4, text: str = "nested") -> bytes:
    """One page that draws form X1 ``fanout`` times, X1 draws X2 ``fanout`` times, ... ``levels`` deep
    (fanout**levels draws); the deepest form draws a little text."""
    first_form = 4  # objects: 1 catalog, 2 pages, 3 page, 4.. forms, then the content and the font
    n = len(b"")  # noqa: F841 (keeps the layout readable)
    font = first_form + levels + 1
    forms = []
    for level in range(levels):
        xref = first_form + level
        if level == levels - 1:
            body = f"BT /F1 12 Tf 10 10 Td ({text}) Tj ET".encode()
            res = b"/Resources << /Font << /F1 %d 0 R >> >>" % font
        else:
            body = b" ".join(b"q 1 0 0 1 0 0 cm /X Do Q" for _ in range(fanout))
            res = b"/Resources << /XObject << /X %d 0 R >> >>" % (xref + 1)
        forms.append(_stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] " + res, body))
    content = _stream(b"", b" ".join(b"q /X Do Q" for _ in range(fanout)))
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /XObject << /X %d 0 R >> >> >>" % (first_form + levels, first_form))
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page,
                 *forms, content, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"])


def nested_images(levels: int = 8, fanout: int = 4) -> bytes:
    """One page with a line of text, then forms nested ``levels`` deep (``fanout`` draws each), the deepest
    drawing a tiny image stretched over the whole page: ``fanout**levels`` full-page image draws. Reading
    its text is quick (the text device skips images) and its draw count is under the ingest limit for
    8 levels (65,536); drawing it takes minutes."""
    first_form = 4  # objects: 1 catalog, 2 pages, 3 page, 4.. forms, then the content, the font, the image
    content_ref, font, image = first_form + levels, first_form + levels + 1, first_form + levels + 2
    forms = []
    for level in range(levels):
        if level == levels - 1:
            body, res = b"q 612 0 0 792 0 0 cm /I Do Q", b"/Resources << /XObject << /I %d 0 R >> >>" % image
        else:
            body = b" ".join(b"q /X Do Q" for _ in range(fanout))
            res = b"/Resources << /XObject << /X %d 0 R >> >>" % (first_form + level + 1)
        forms.append(_stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] " + res, body))
    content = _stream(b"", b"BT /F1 12 Tf 72 740 Td (A page whose picture is drawn many times over) Tj ET q /X Do Q")
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 %d "
            b"0 R >> /XObject << /X %d 0 R >> >> >>" % (content_ref, font, first_form))
    pixels = _stream(b"/Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceRGB /BitsPerComponent 8",
                     bytes(range(48)))
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page,
                 *forms, content, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", pixels])


def shared_stream(pages: int = 8, mib: int = 128) -> bytes:
    """``pages`` pages whose one content stream (deflated) is ``mib`` MiB of tiny path operators."""
    unit = b"0 0 m 1 1 l S\n"
    raw = unit * (mib * 1024 * 1024 // len(unit))
    content = _stream(b"/Filter /FlateDecode", zlib.compress(raw, 9))
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(pages))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
                 content, *[page] * pages])


def deflate_bomb(mib: int = 1024) -> bytes:
    """One page whose content stream inflates to ``mib`` MiB of spaces."""
    comp = zlib.compressobj(9)
    chunk = b" " * (1024 * 1024)
    data = b"".join(comp.compress(chunk) for _ in range(mib)) + comp.flush()
    content = _stream(b"/Filter /FlateDecode", data)
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>", content,
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"])
