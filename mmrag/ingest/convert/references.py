"""Refuse Office files that include other local files, before a converter sees them (the second
line of defence: the converter jail, :mod:`mmrag.ingest.convert.sandbox`, is the first).

Refused:

* fields that pull content in: ``INCLUDEPICTURE`` / ``INCLUDETEXT`` / ``INCLUDE`` / ``IMPORT``
  with a local target (a path or a ``file:`` URL), and ``LINK`` / ``DDE`` / ``DDEAUTO`` always
  (RTF ``\\fldinst``, DOCX ``w:instrText`` / ``w:fldSimple``, DOC field codes);
* RTF linked objects (``\\objlink`` / ``\\objautlink``);
* OOXML and ODF relationships outside the allow-list of :mod:`mmrag.ingest.convert.relationships`
  (external relationships other than web hyperlinks, linked pictures and templates; data links:
  external workbooks, data connections, query tables, Power Query, mail merge sources; ODF
  references out of the package, DDE and database sources; formulas naming files or other
  workbooks);
* SVG parts whose ``href`` is local;
* VML pictures and shapes naming a file or a host, and pictures loaded from an external hyperlink
  relationship: :mod:`mmrag.ingest.convert.vml_links` (a package-wide check, fed by the same scanner).

Linked pictures and templates are common in real files and harmless once dead, so they are not
refused: :func:`mmrag.ingest.convert.unlink.unlink_external` gives the converter a copy whose links
point nowhere. :class:`OoxmlRules` and :class:`OdfRules` are handlers fed
by the XML scanner of :mod:`mmrag.ingest.zipcheck`, which decodes each part as its declaration says;
:func:`check_rtf` and :func:`check_word97` read the non-ZIP kinds.
"""

from __future__ import annotations

import re

from mmrag.errors import InvalidInput
from mmrag.ingest.convert.relationships import (
    ALLOWED_FORMULA,
    ALLOWED_ODF,
    ALLOWED_OOXML,
    formula_refusal,
    odf_refusal,
    relationship_refusal,
)

FIELDS = ("INCLUDEPICTURE", "INCLUDETEXT", "INCLUDE", "IMPORT", "LINK", "DDEAUTO", "DDE")
_ALWAYS = frozenset({"LINK", "DDE", "DDEAUTO"})  # links to other applications' files: never a web URL
_FIELD = re.compile(r"^\s*(?:\\\*\s*)?(" + "|".join(FIELDS) + r")\b\s*(?:\"([^\"]*)\"|(\S*))", re.IGNORECASE)
_REMOTE = re.compile(r"^\s*(?:https?|ftp)://", re.IGNORECASE)
XLINK = "http://www.w3.org/1999/xlink"
SVG = "http://www.w3.org/2000/svg"
_ODF = "urn:oasis:names:tc:opendocument:xmlns:"
_ODF_LINKS = {f"{_ODF}text:1.0 a", f"{_ODF}drawing:1.0 a", f"{_ODF}drawing:1.0 area-rectangle",
              f"{_ODF}drawing:1.0 area-circle", f"{_ODF}drawing:1.0 area-polygon"}  # hyperlinks
_ODF_LISTENERS = {f"{_ODF}script:1.0 event-listener", f"{_ODF}presentation:1.0 event-listener"}
_ODF_DDE = {f"{_ODF}office:1.0 dde-source", f"{_ODF}text:1.0 dde-connection-decl", f"{_ODF}table:1.0 dde-link"}
_ODF_DATA = {f"{_ODF}table:1.0 {x}" for x in ("database-source-sql", "database-source-table", "database-source-query",
                                               "source-service", "cell-range-source")}
_ODF_TEMPLATE = f"{_ODF}meta:1.0 template"
_ODF_FORMULA_ATTRS = (f"{_ODF}table:1.0 formula", f"{_ODF}table:1.0 condition", f"{_ODF}table:1.0 expression")
_SHEET = ("http://schemas.openxmlformats.org/spreadsheetml/2006/main", "http://purl.oclc.org/ooxml/spreadsheetml/main",
          "http://schemas.microsoft.com/office/excel/2006/main")  # the last: x14 formulas (xm:f)
_SHEET_LINKS = frozenset({"connection", "externalBook", "ddeLink", "oleLink", "queryTableRefresh"})
_FORMULAS = frozenset({"f", "formula", "formula1", "formula2", "definedName"})
_MASHUP = "http://schemas.microsoft.com/DataMashup"
_FIELDS_ALLOWED = "fields that do not include files (PAGE, HYPERLINK, INCLUDEPICTURE of a web URL...)"
_WORD = ("http://schemas.openxmlformats.org/wordprocessingml/2006/main", "http://purl.oclc.org/ooxml/wordprocessingml/main")
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"


def refused(name: str, what: str, allowed: str = "") -> InvalidInput:
    """The 400 for a file that reaches outside itself: which part and relationship, and what is allowed."""
    return InvalidInput(f"{name} includes another file ({what}); documents that pull in files, data or links by path "
                        "are refused: embed the picture, text or data instead"
                        + (f"; allowed: {allowed}" if allowed else "") + " (docs/security.md)",
                        detail={"reason": "external_reference", "reference": what[:200]})


def field_type(instruction: str) -> str | None:
    """The including field an instruction is (``INCLUDEPICTURE``...) when it includes a local file, or None."""
    match = _FIELD.match(instruction)
    if match is None:
        return None
    kind, target = match.group(1).upper(), match.group(2) if match.group(2) is not None else match.group(3)
    return kind if kind in _ALWAYS or is_local(target or "") else None


def is_local(ref: str) -> bool:
    """A reference to a file of the machine that opens the document: a path or a ``file:`` URL (not a web URL)."""
    return bool(ref.strip()) and not _REMOTE.match(ref)


class StartOnly:
    """XML scanner rules that look only at start tags (the other handlers do nothing)."""

    def end(self, tag: str) -> None:
        pass

    def chars(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class OoxmlRules:
    """XML scanner handlers for one part of a DOCX/PPTX/XLSX. Namespaced names are ``uri local``."""

    def __init__(self, name: str, part: str) -> None:
        self.name, self.part = name, part
        self.fields: list[list[str]] = []  # open fields (w:fldChar begin), each its instruction text so far
        self.in_instr = 0
        self.formula: list[str] | None = None  # the text of the open formula element (f, definedName...)

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        ns, _, local = tag.rpartition(" ")
        if ns == _RELS and local == "Relationship":
            self._relationship(attrs)
        elif ns in _WORD:
            self._word(ns, local, attrs)
        elif ns == SVG:
            svg_href(self.name, local, attrs)
        elif ns in _SHEET:
            self._sheet(local)
        elif ns == _MASHUP:
            raise refused(self.name, f"a Power Query data connection (DataMashup) in {self.part}", ALLOWED_OOXML)

    def _sheet(self, local: str) -> None:
        if local in _SHEET_LINKS:
            raise refused(self.name, f"a link to external data ({local}) in {self.part}", ALLOWED_OOXML)
        if local in _FORMULAS:
            self.formula = []

    def _relationship(self, attrs: dict[str, str]) -> None:
        why = relationship_refusal(self.part, attrs.get("Type", ""), attrs.get("Target", ""),
                                   attrs.get("TargetMode", ""))
        if why:
            raise refused(self.name, why, ALLOWED_OOXML)

    def _word(self, ns: str, local: str, attrs: dict[str, str]) -> None:
        if local == "mailMerge":
            raise refused(self.name, f"a mail merge data source in {self.part}", ALLOWED_OOXML)
        if local == "fldSimple":
            self._check(attrs.get(f"{ns} instr", ""))
        elif local == "instrText":
            self.in_instr += 1
        elif local == "fldChar":
            kind = attrs.get(f"{ns} fldCharType", "")
            if kind == "begin":
                self.fields.append([])
            elif kind in ("separate", "end") and self.fields:
                self._check("".join(self.fields[-1]))
                if kind == "end":
                    self.fields.pop()

    def end(self, tag: str) -> None:
        if tag.endswith(" instrText") and self.in_instr:
            self.in_instr -= 1
        elif self.formula is not None:
            why = formula_refusal("".join(self.formula))
            if why:
                raise refused(self.name, f"a formula naming {why} in {self.part}", ALLOWED_FORMULA)
            self.formula = None

    def chars(self, text: str) -> None:
        if self.formula is not None:
            self.formula.append(text)
        if self.in_instr:
            if self.fields:
                self.fields[-1].append(text)
            else:
                self._check(text)

    def close(self) -> None:
        for field in self.fields:
            self._check("".join(field))

    def _check(self, instruction: str) -> None:
        kind = field_type(instruction)
        if kind:
            raise refused(self.name, f"field {kind} in {self.part}: {instruction.strip()[:120]!r}", _FIELDS_ALLOWED)


def svg_href(name: str, local: str, attrs: dict[str, str]) -> None:
    for key in (f"{XLINK} href", "href"):
        ref = attrs.get(key, "").strip()
        if ref and not ref.startswith(("#", "data:")) and is_local(ref):
            raise refused(name, f"SVG {local} referencing {ref[:120]!r}")


class OdfRules(StartOnly):
    """XML scanner handlers for one part of an ODT/ODP/ODS (also the SVG images inside one)."""

    def __init__(self, name: str, part: str) -> None:
        self.name, self.part = name, part

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if tag in _ODF_DDE or tag in _ODF_DATA:
            raise refused(self.name, f"a link to external data ({tag.rpartition(' ')[2]}) in {self.part}",
                          ALLOWED_ODF)
        ns, _, local = tag.rpartition(" ")
        if ns == SVG:
            svg_href(self.name, local, attrs)
            return
        if tag == _ODF_TEMPLATE:
            return  # removed from the converter's copy (unlink_external)
        for key in (f"{XLINK} href", f"{_ODF}form:1.0 image-data"):
            why = odf_refusal(local, attrs.get(key, ""), tag in _ODF_LINKS, tag in _ODF_LISTENERS)
            if why:
                raise refused(self.name, f"{why} in {self.part}", ALLOWED_ODF)
        for key in _ODF_FORMULA_ATTRS:
            why = formula_refusal(attrs.get(key, ""))
            if why:
                raise refused(self.name, f"a formula naming {why} in {self.part}", ALLOWED_FORMULA)


_RTF_FLDINST = re.compile(rb"\\fldinst\b")
_RTF_TOKEN = re.compile(rb"\\'([0-9a-fA-F]{2})|\\u(-?\d+) ?\??|\\[a-zA-Z]+-?\d* ?|\\.|[{}]|[^\\{}]+")
_RTF_OBJLINK = re.compile(rb"\\obj(?:aut)?link\b")


def _rtf_group_text(data: bytes, start: int) -> str:
    """The text of the group in which ``start`` lies, from there to its closing brace (escapes decoded)."""
    depth, out = 0, []
    for m in _RTF_TOKEN.finditer(data, start):
        token = m.group(0)
        if token == b"{":
            depth += 1
        elif token == b"}":
            depth -= 1
            if depth < 0:
                break
        elif m.group(1):
            out.append(bytes.fromhex(m.group(1).decode()).decode("cp1252", "replace"))
        elif m.group(2):
            out.append(chr(int(m.group(2)) % 65536))
        elif not token.startswith(b"\\"):
            out.append(token.decode("cp1252", "replace").replace("\r", "").replace("\n", ""))
        if sum(len(x) for x in out) > 4096:
            break
    return "".join(out)


def check_rtf(data: bytes, name: str) -> None:
    """Refuse an RTF whose fields include files or whose objects are links."""
    if _RTF_OBJLINK.search(data):
        raise refused(name, "a linked OLE object (\\objlink)")
    for m in _RTF_FLDINST.finditer(data):
        instruction = _rtf_group_text(data, m.end())
        kind = field_type(instruction)
        if kind:
            raise refused(name, f"field {kind}: {instruction.strip()[:120]!r}")


def _word97_pattern(encoding: str) -> re.Pattern[bytes]:
    def enc(text: str) -> bytes:
        return re.escape(text.encode(encoding))
    words = b"|".join(b"".join(b"(?:" + enc(c.upper()) + b"|" + enc(c.lower()) + b")" for c in word) for word in FIELDS)
    unit = 2 if encoding == "utf-16-le" else 1
    # the field-begin mark, spaces, the field type, then its instruction up to the separator (0x14) or end (0x15)
    rest = b"(?:(?!" + enc("\x14") + b"|" + enc("\x15") + b")" + b"." * unit + b"){0,300}"
    return re.compile(enc("\x13") + b"(?:" + enc(" ") + b")*(?:" + words + b")" + rest, re.DOTALL)


_WORD97 = [(_word97_pattern("latin-1"), "cp1252"), (_word97_pattern("utf-16-le"), "utf-16-le")]


def check_word97(data: bytes, name: str) -> None:
    """Refuse a Word 97-2003 (DOC) file whose field codes (after the 0x13 field-begin mark) include a local
    file, in either of the text encodings DOC stores text in."""
    for pattern, encoding in _WORD97:
        for m in pattern.finditer(data):
            instruction = m.group(0).decode(encoding, "replace")[1:]
            kind = field_type(instruction)
            if kind:
                raise refused(name, f"field code {kind}: {instruction.strip()[:120]!r}")
