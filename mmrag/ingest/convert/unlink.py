"""The converter's copy of an Office or OpenDocument file with its allowed outside links made dead.

Office writes some links to local files as a matter of course: a picture inserted with "link to
file", the template a document was made from (``attachedTemplate``; ODF ``meta:template``). The
up-front check (:mod:`mmrag.ingest.convert.relationships`) lets these through, and here their
targets are emptied (OOXML) or the template reference removed (ODF), so no converter ever follows
them; the converter jail would find nothing there anyway.
"""

from __future__ import annotations

import io
import zipfile
from xml.etree import ElementTree

from mmrag.ingest.convert.relationships import UNLINKED, rel_type

_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_META = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


def unlink_external(data: bytes) -> bytes:
    """A copy of an OOXML or ODF package with linked pictures and templates pointing nowhere; the
    bytes themselves when it has none. Its XML was checked before (no DTD: :mod:`mmrag.ingest.zipcheck`)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zin:
        changed = {i.filename: _rewritten(i.filename, zin.read(i)) for i in zin.infolist()
                   if i.filename.endswith(".rels") or i.filename == "meta.xml"}
        changed = {k: v for k, v in changed.items() if v is not None}
        if not changed:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                zout.writestr(info, changed.get(info.filename) or zin.read(info), compress_type=info.compress_type)
        return out.getvalue()


def _rewritten(name: str, xml: bytes) -> bytes | None:
    return _odf_meta(xml) if name == "meta.xml" else _rels(xml)


def _rels(rels: bytes) -> bytes | None:
    """The relationships part with external picture and template links emptied, or None when it has none."""
    root = ElementTree.fromstring(rels)
    hits = [r for r in root if (r.get("TargetMode") or "").strip().lower() == "external"
            and rel_type(r.get("Type") or "") in UNLINKED and r.get("Target")]
    if not hits:
        return None
    for rel in hits:
        rel.set("Target", "")
    ElementTree.register_namespace("", _RELS)
    return bytes(ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8"))


def _odf_meta(meta: bytes) -> bytes | None:
    """meta.xml without ``meta:template`` (the template the document was made from), or None when it has none."""
    root = ElementTree.fromstring(meta)
    parents = [(p, c) for p in root.iter() for c in p if c.tag == f"{{{_META}}}template"]
    if not parents:
        return None
    for parent, child in parents:
        parent.remove(child)
    for prefix, uri in (("office", _OFFICE), ("meta", _META), ("xlink", "http://www.w3.org/1999/xlink"),
                        ("dc", "http://purl.org/dc/elements/1.1/")):
        ElementTree.register_namespace(prefix, uri)
    return bytes(ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8"))
