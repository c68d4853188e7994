"""The allow-list of a package's relationships to anything outside it (OOXML relationships, ODF
``xlink:href``, spreadsheet formulas), checked before a converter sees the file.

OOXML (``*.rels`` parts):

* an internal relationship (no ``TargetMode="External"``) is allowed when its target resolves
  inside the package (no URL scheme, no climbing above the package root) and its type is not a data
  link (:data:`DATA_LINKS`: another workbook, a data connection, a query table);
* an external one is allowed only as a ``hyperlink`` to http(s) or mailto, or as one of
  :data:`UNLINKED` (a linked picture, a document template), whose target is emptied in the
  converter's copy (:func:`mmrag.ingest.convert.references.unlink_external`), so it is never followed;
  every other external relationship, of any type, known or not, is refused.

ODF: an ``xlink:href`` (and ``form:image-data``) must name a path inside the package; hyperlinks
(``text:a``, ``draw:a``, image-map areas) may also name http(s) and mailto, event listeners only a
macro URL (``vnd.sun.star.script:``: macros never run, docs/security.md); ``meta:template`` is removed
from the converter's copy. Formulas (XLSX ``<f>``, defined names, validation and conditional-format
formulas; ODS ``table:formula``) must not name a ``file:`` URL, another workbook or a path, nor call a
function that fetches or links (:data:`LINKING_FUNCTIONS`).
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

REL_TYPE = re.compile(r"/relationships/(?:[^/]+/)*([^/]+)$")
UNLINKED = frozenset({"image", "attachedTemplate"})  # external: kept, target emptied for the converter
DATA_LINKS = frozenset({"externalLink", "externalLinkPath", "connections", "queryTable", "xlExternalLinkPath",
                        "mailMergeSource", "mailMergeHeaderSource", "recipientData"})
WEB_SCHEMES = ("http", "https", "mailto")
MACRO_SCHEMES = ("vnd.sun.star.script",)
LINKING_FUNCTIONS = ("WEBSERVICE", "FILTERXML", "RTD", "DDE")
ALLOWED_OOXML = ("relationships to parts inside the file, hyperlinks to http(s) or mailto, and linked pictures or "
                 "templates (never loaded)")
ALLOWED_ODF = "paths inside the file, and hyperlinks to http(s) or mailto"
ALLOWED_FORMULA = "references to cells of this workbook; no file: URLs, other workbooks, paths, " + \
                  "/".join(LINKING_FUNCTIONS)

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_FUNCTION = re.compile(r"(?<![\w])(?:_xlfn\.|COM\.MICROSOFT\.)?(" + "|".join(LINKING_FUNCTIONS) + r")\s*\(",
                       re.IGNORECASE)
_QUOTED_REF = re.compile(r"'((?:[^']|'')*)'\s*[!#]")  # 'sheet'!A1, 'file:///x'#$Sheet.A1
_BOOK_REF = re.compile(r"(?<![\w\].])\[[^\[\]]+\](?:\w[\w.]*)?!")  # [1]Sheet1!A1, [1]!name, [b.xlsx]S!A1


def rel_type(uri: str) -> str:
    """The short name of a relationship type URI (``.../relationships/image`` -> ``image``)."""
    match = REL_TYPE.search(uri.strip())
    return match.group(1) if match else uri.strip()


def scheme(ref: str) -> str | None:
    """The URL scheme of ``ref`` (lower case), or None for a path (``C:`` drive letters count as paths)."""
    match = _SCHEME.match(ref.strip())
    return match.group(1).lower() if match and len(match.group(1)) > 1 else None


def in_package(base: str, target: str, rooted: bool = True) -> bool:
    """``target``, relative to the folder ``base`` of a package (or from its root when it starts with
    ``/`` and ``rooted``: OOXML), names a part inside the package: no scheme, no drive, no UNC, not
    above the root. ODF (``rooted=False``) takes a leading ``/`` as the machine's root: not inside."""
    ref = unquote(target.strip()).replace("\\", "/")
    if not ref or ref.startswith("#"):
        return True
    if scheme(ref) is not None or re.match(r"^[A-Za-z]:", ref) or ref.startswith("//"):
        return False
    if ref.startswith("/") and not rooted:
        return False
    path = posixpath.normpath(ref.lstrip("/") if ref.startswith("/") else posixpath.join(base, ref))
    return path != ".." and not path.startswith("../")


def relationship_refusal(part: str, kind_uri: str, target: str, mode: str) -> str | None:
    """Why an OOXML relationship is refused (a phrase), or None when the allow-list allows it."""
    kind = rel_type(kind_uri)
    where = f"relationship {kind!r} to {target.strip()[:120]!r} in {part}"
    if kind == "aFChunk":
        return f"an imported chunk (altChunk): {where}"
    if kind in DATA_LINKS:
        return f"a link to external data: {where}"
    if mode.strip().lower() == "external":
        if kind == "hyperlink" and scheme(target) in WEB_SCHEMES:
            return None
        if kind in UNLINKED:
            return None
        return f"an external {where}"
    source_folder = posixpath.dirname(posixpath.dirname(part))  # word/_rels/x.rels -> word
    return None if in_package(source_folder, target) else f"a {where} pointing out of the file"


def odf_refusal(local: str, href: str, hyperlink: bool, listener: bool) -> str | None:
    """Why an ODF ``xlink:href`` on element ``local`` is refused, or None when allowed."""
    if in_package("", href, rooted=False):
        return None
    if hyperlink and scheme(href) in WEB_SCHEMES:
        return None
    if listener and scheme(href) in MACRO_SCHEMES:
        return None
    return f"{local} linked to {href.strip()[:120]!r}"


def formula_refusal(formula: str) -> str | None:
    """Why a spreadsheet formula is refused (it names a file, another workbook or a fetching function), or None."""
    if "file:" in formula.lower():
        return "a file: URL"
    function = _FUNCTION.search(formula)
    if function:
        return f"the function {function.group(1).upper()}"
    for quoted in _QUOTED_REF.finditer(formula):
        if re.search(r"[/\\:\[\]]", quoted.group(1)):
            return f"another file ({quoted.group(0)[:80]!r})"
    book = _BOOK_REF.search(formula)
    if book:
        return f"another workbook ({book.group(0)[:80]!r})"
    return None
