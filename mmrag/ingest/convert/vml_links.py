"""VML and picture references of an OOXML package (DOCX, XLSX, PPTX), checked like its other links.

Legacy VML shapes (``w:pict``, ``w:object``, XLSX/PPTX ``vmlDrawing*.vml`` parts, header/footer
pictures) name their pictures two ways, and both are checked before a converter sees the file:

* **directly**, by an attribute holding a location: ``src`` of any VML element (``v:imagedata``,
  ``v:image``, ``v:fill``, ``v:stroke``: a URL resolved against the document's own location, so
  outside the package), ``o:href`` and ``o:althref`` (the picture's original location). Allowed: empty,
  a ``#`` fragment, a ``data:`` URI, a ``cid:`` (a part of an e-mail, which Outlook writes); a path, a
  ``file:`` URL, a UNC name or any URL with a host is refused. A shape's ``href`` (its hyperlink) is a
  hyperlink: http(s), mailto or ``#`` as everywhere else;
* **through a relationship** (``r:id``, ``r:pict``, ``r:href``, ``o:relid`` on a VML element;
  ``r:embed``/``r:link`` of a DrawingML ``a:blip``): the relationship it names, in the part's own
  ``_rels``, must be internal (the allow-list of :mod:`mmrag.ingest.convert.relationships` keeps those
  inside the package) or a linked picture (an external ``image``, whose target the converter's copy
  has emptied: :func:`mmrag.ingest.convert.unlink.unlink_external`). A picture loaded from an external
  hyperlink or template relationship (allowed as such, never emptied) is refused.

XLSX form controls' formulas in VML (``x:FmlaLink``, ``x:FmlaRange``...) go through the same formula
rule as cell formulas. :class:`VmlRules` is a handler of the XML scanner
(:mod:`mmrag.ingest.zipcheck`), one per part; :class:`PackageLinks` collects what the parts name and
what their ``_rels`` hold, and :meth:`PackageLinks.check` judges the references once every part is read
(a ``_rels`` part may come before or after the part that uses it).
"""

from __future__ import annotations

import posixpath

from mmrag.ingest.convert.references import refused
from mmrag.ingest.convert.relationships import ALLOWED_FORMULA, UNLINKED, WEB_SCHEMES, formula_refusal, rel_type, scheme

VML = "urn:schemas-microsoft-com:vml"
OFFICE = "urn:schemas-microsoft-com:office:office"
EXCEL = "urn:schemas-microsoft-com:office:excel"
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_R = ("http://schemas.openxmlformats.org/officeDocument/2006/relationships",
      "http://purl.oclc.org/ooxml/officeDocument/relationships")
_BLIP = ("http://schemas.openxmlformats.org/drawingml/2006/main blip", "http://purl.oclc.org/ooxml/drawingml/main blip")
_LOCATIONS = ("src", f"{OFFICE} href", f"{OFFICE} althref")  # a picture's location, named directly
_REL_IDS = (*(f"{r} {a}" for r in _R for a in ("id", "pict", "href")), f"{OFFICE} relid")
_BLIP_IDS = tuple(f"{r} {a}" for r in _R for a in ("embed", "link"))
_FORMULAS = frozenset(f"{EXCEL} {x}" for x in ("FmlaLink", "FmlaRange", "FmlaPict", "FmlaGroup", "FmlaTxbx",
                                               "FmlaMacro"))
_INERT = ("data", "cid")  # schemes that name no file and no host
ALLOWED_VML = ("VML pictures from parts inside the file (r:id, o:relid) or linked pictures (never loaded); src, "
               "o:href and o:althref only empty, #, data: or cid:; shape hyperlinks to http(s) or mailto")


def rels_part(part: str) -> str:
    """The relationships part of ``part`` (``word/document.xml`` -> ``word/_rels/document.xml.rels``)."""
    folder, base = posixpath.split(part)
    return posixpath.join(folder, "_rels", f"{base}.rels")


def _names_nothing_outside(ref: str) -> bool:
    value = ref.strip()
    return not value or value.startswith("#") or scheme(value) in _INERT


class PackageLinks:
    """What the parts of one OOXML package reference by relationship id, and the external relationships
    of its ``_rels`` parts; :meth:`check` refuses a picture loaded from an external relationship that is
    not a linked picture."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.external: dict[tuple[str, str], tuple[str, str]] = {}  # (rels part, id) -> (type, target)
        self.uses: list[tuple[str, str, str]] = []  # (part, id, what names it: "v:imagedata r:id")

    def relationship(self, part: str, attrs: dict[str, str]) -> None:
        if (attrs.get("TargetMode") or "").strip().lower() == "external":
            self.external[(part, attrs.get("Id", ""))] = (rel_type(attrs.get("Type", "")), attrs.get("Target", ""))

    def check(self) -> None:
        for part, rid, what in self.uses:
            kind, target = self.external.get((rels_part(part), rid), ("", ""))
            if kind and kind not in UNLINKED:
                raise refused(self.name, f"a picture ({what}) loaded from the external {kind!r} relationship to "
                                         f"{target.strip()[:120]!r} in {part}", ALLOWED_VML)


class VmlRules:
    """XML scanner handlers for one part of an OOXML package: VML locations, picture references and
    VML form-control formulas (namespaced names are ``uri local``)."""

    def __init__(self, name: str, part: str, links: PackageLinks) -> None:
        self.name, self.part, self.links = name, part, links
        self.formula: list[str] | None = None  # text of the open x:Fmla* element

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        ns, _, local = tag.rpartition(" ")
        if ns in (VML, OFFICE):
            self._vml(ns, local, attrs)
        elif tag in _BLIP:
            self._uses("a:blip", _BLIP_IDS, attrs)
        elif tag == f"{_RELS} Relationship":
            self.links.relationship(self.part, attrs)
        elif tag in _FORMULAS:
            self.formula = []

    def _vml(self, ns: str, local: str, attrs: dict[str, str]) -> None:
        element = f"{'v' if ns == VML else 'o'}:{local}"
        for key in _LOCATIONS:
            ref = attrs.get(key, "")
            if not _names_nothing_outside(ref):
                attr = key.rpartition(" ")[2] if key == "src" else f"o:{key.rpartition(' ')[2]}"
                raise refused(self.name, f"a VML picture ({element} {attr}) pointing at {ref.strip()[:120]!r} in "
                                         f"{self.part}", ALLOWED_VML)
        link = attrs.get("href", "").strip()
        if ns == VML and link and not link.startswith("#") and scheme(link) not in WEB_SCHEMES:
            raise refused(self.name, f"a VML shape hyperlink ({element} href) to {link[:120]!r} in {self.part}",
                          ALLOWED_VML)
        self._uses(element, _REL_IDS, attrs)

    def _uses(self, element: str, keys: tuple[str, ...], attrs: dict[str, str]) -> None:
        for key in keys:
            rid = attrs.get(key, "").strip()
            if rid:
                prefix = "o" if key.startswith(OFFICE) else "r"
                self.links.uses.append((self.part, rid, f"{element} {prefix}:{key.rpartition(' ')[2]}"))

    def end(self, tag: str) -> None:
        if self.formula is not None and tag in _FORMULAS:
            why = formula_refusal("".join(self.formula))
            self.formula = None
            if why:
                raise refused(self.name, f"a form control formula naming {why} in {self.part}", ALLOWED_FORMULA)

    def chars(self, text: str) -> None:
        if self.formula is not None:
            self.formula.append(text)

    def close(self) -> None:
        pass
