"""Refuse Office files that include other local files, before a converter sees them (the second
line of defence: the converter jail, :mod:`mmrag.ingest.convert.sandbox`, is the first).

A reference is *local* when it names a path (absolute, relative, UNC) or a ``file:`` URL; web URLs
are not refused (the converter has no network: they stay whatever result the file cached).
Refused:

* fields that pull content in: ``INCLUDEPICTURE`` / ``INCLUDETEXT`` / ``INCLUDE`` / ``IMPORT``
  with a local target, and ``LINK`` / ``DDE`` / ``DDEAUTO`` always (RTF ``\\fldinst``, DOCX
  ``w:instrText`` / ``w:fldSimple``, DOC field codes);
* linked objects: RTF ``\\objlink`` / ``\\objautlink``; OOXML external relationships with a local
  target to an OLE object, package, sub-document or frame; ``aFChunk`` (imported HTML/RTF chunks)
  of any mode; ODF references out of the package with a local target (linked images, sections,
  objects, table sources, form images; hyperlinks and event listeners excepted) and DDE links;
* SVG parts whose ``href`` is local.

OOXML pictures *linked* to a local file (Office's "link to file") are common in real decks and
harmless once the link is dead, so they are not refused: :func:`unlink_pictures` gives the converter
a copy whose picture links point nowhere. :class:`OoxmlRules` and :class:`OdfRules` are handlers fed
by the XML scanner of :mod:`mmrag.ingest.zipcheck`, which decodes each part as its declaration says;
:func:`check_rtf` and :func:`check_word97` read the non-ZIP kinds.
"""

from __future__ import annotations

import io
import re
import zipfile
from xml.etree import ElementTree

from mmrag.errors import InvalidInput

FIELDS = ("INCLUDEPICTURE", "INCLUDETEXT", "INCLUDE", "IMPORT", "LINK", "DDEAUTO", "DDE")
_ALWAYS = frozenset({"LINK", "DDE", "DDEAUTO"})  # links to other applications' files: never a web URL
_FIELD = re.compile(r"^\s*(?:\\\*\s*)?(" + "|".join(FIELDS) + r")\b\s*(?:\"([^\"]*)\"|(\S*))", re.IGNORECASE)
_REMOTE = re.compile(r"^\s*(?:https?|ftp)://", re.IGNORECASE)
_LINKED = ("/oleObject", "/package", "/subDocument", "/frame")
_PICTURE = "/image"
XLINK = "http://www.w3.org/1999/xlink"
SVG = "http://www.w3.org/2000/svg"
_ODF = "urn:oasis:names:tc:opendocument:xmlns:"
_ODF_LINKS = {f"{_ODF}text:1.0 a", f"{_ODF}drawing:1.0 a", f"{_ODF}script:1.0 event-listener",
              f"{_ODF}presentation:1.0 event-listener", f"{_ODF}drawing:1.0 area-rectangle",
              f"{_ODF}drawing:1.0 area-circle", f"{_ODF}drawing:1.0 area-polygon"}
_ODF_DDE = {f"{_ODF}office:1.0 dde-source", f"{_ODF}text:1.0 dde-connection-decl", f"{_ODF}table:1.0 dde-link"}
_WORD = ("http://schemas.openxmlformats.org/wordprocessingml/2006/main", "http://purl.oclc.org/ooxml/wordprocessingml/main")
_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
def refused(name: str, what: str) -> InvalidInput:
    return InvalidInput(f"{name} includes another file ({what}); documents that pull in files or links by path "
                        "are refused: embed the picture or text instead (docs/security.md)",
                        detail={"reason": "external_reference", "reference": what[:200]})


def field_type(instruction: str) -> str | None:
    """The including field an instruction is (``INCLUDEPICTURE``...) when it includes a local file, or None."""
    match = _FIELD.match(instruction)
    if match is None:
        return None
    kind, target = match.group(1).upper(), match.group(2) if match.group(2) is not None else match.group(3)
    return kind if kind in _ALWAYS or is_local(target or "") else None


def is_internal(href: str) -> bool:
    """A reference inside the package (``Pictures/x.png``, ``./Object 1``, ``#anchor``)."""
    ref = href.strip()
    if not ref or ref.startswith("#"):
        return True
    if ref.startswith(("/", "\\")) or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", ref):
        return False
    return ".." not in re.split(r"[/\\]", ref)


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

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        ns, _, local = tag.rpartition(" ")
        if ns == _RELS and local == "Relationship":
            self._relationship(attrs)
        elif ns in _WORD:
            self._word(ns, local, attrs)
        elif ns == SVG:
            svg_href(self.name, local, attrs)

    def _relationship(self, attrs: dict[str, str]) -> None:
        kind, target = attrs.get("Type", ""), attrs.get("Target", "")
        if kind.endswith("/aFChunk"):
            raise refused(self.name, f"an imported chunk (altChunk) {target!r}")
        if attrs.get("TargetMode", "").strip().lower() == "external" and kind.endswith(_LINKED) and is_local(target):
            raise refused(self.name, f"linked {kind.rsplit('/', 1)[-1]} {target!r}")

    def _word(self, ns: str, local: str, attrs: dict[str, str]) -> None:
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

    def chars(self, text: str) -> None:
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
            raise refused(self.name, f"field {kind} in {self.part}: {instruction.strip()[:120]!r}")


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
        if tag in _ODF_DDE:
            raise refused(self.name, f"a DDE link in {self.part}")
        ns, _, local = tag.rpartition(" ")
        if ns == SVG:
            svg_href(self.name, local, attrs)
            return
        if tag in _ODF_LINKS:
            return
        for key, value in attrs.items():
            if key in (f"{XLINK} href", f"{_ODF}form:1.0 image-data") and not is_internal(value) and is_local(value):
                raise refused(self.name, f"{local} linked to {value.strip()[:120]!r} in {self.part}")


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


def unlink_pictures(data: bytes) -> bytes:
    """A copy of an OOXML file whose pictures linked to local files link to nothing (the relationship
    targets become empty); the bytes themselves when there is none."""
    with zipfile.ZipFile(io.BytesIO(data)) as zin:
        changed = {i.filename: _unlinked(zin.read(i)) for i in zin.infolist() if i.filename.endswith(".rels")}
        changed = {k: v for k, v in changed.items() if v is not None}
        if not changed:
            return data
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
            for info in zin.infolist():
                zout.writestr(info, changed.get(info.filename) or zin.read(info), compress_type=info.compress_type)
        return out.getvalue()


def _unlinked(rels: bytes) -> bytes | None:
    """The relationships part with local picture links emptied, or None when it has none (checked by
    :mod:`mmrag.ingest.zipcheck` before: no DTD)."""
    root = ElementTree.fromstring(rels)
    hits = [r for r in root if r.get("TargetMode", "").strip().lower() == "external"
            and r.get("Type", "").endswith(_PICTURE) and is_local(r.get("Target", ""))]
    if not hits:
        return None
    for rel in hits:
        rel.set("Target", "")
    ElementTree.register_namespace("", _RELS)
    return bytes(ElementTree.tostring(root, xml_declaration=True, encoding="UTF-8"))
