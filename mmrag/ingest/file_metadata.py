"""Title, author and dates read from a file's own metadata, per kind.

Office (``docProps/core.xml``), OpenDocument (``meta.xml``), EPUB (the OPF package file), HTML
(``<title>``, ``<meta name="author">``), email (Subject, From, Date), Markdown (the first heading),
PDF (the info dictionary; also the fallback for converted files, whose PDF LibreOffice fills from
the source). XML is parsed only after :func:`mmrag.ingest.zipcheck.check_zip` has refused entity
declarations, and only its first MiB.
"""

from __future__ import annotations

import contextlib
import io
import re
import xml.etree.ElementTree as ET
import zipfile
from email.utils import parsedate_to_datetime

import pymupdf

from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.sniff import Kind

_XML_MAX = 1 << 20
_DC = "{http://purl.org/dc/elements/1.1/}"
_DCTERMS = "{http://purl.org/dc/terms/}"
_META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OFFICE_KINDS = frozenset({"docx", "docm", "pptx", "pptm", "xlsx", "xlsm"})
_ODF_KINDS = frozenset({"odt", "odp", "ods"})
_PDF_DATE = re.compile(r"D:(\d{4})(\d\d)?(\d\d)?(\d\d)?(\d\d)?(\d\d)?")
_MD_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*\s*$", re.M)


def _clean(value: str | None) -> str | None:
    value = (value or "").strip()
    return value[:500] or None


def _zip_xml(data: bytes, member: str) -> ET.Element | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf, zf.open(member) as f:
            return ET.fromstring(f.read(_XML_MAX))
    except (KeyError, zipfile.BadZipFile, ET.ParseError, OSError, ValueError):
        return None


def _text(root: ET.Element | None, *tags: str) -> str | None:
    if root is None:
        return None
    for tag in tags:
        el = root.find(f".//{tag}")
        if el is not None and _clean(el.text):
            return _clean(el.text)
    return None


def pdf_date(value: str | None) -> str | None:
    """``D:20220625120000+02'00'`` -> ``2022-06-25T12:00:00`` (date part only when that is all there is)."""
    m = _PDF_DATE.match(value or "")
    if not m:
        return None
    y, mo, d, hh, mm, ss = (g for g in m.groups())
    date = f"{y}-{mo or '01'}-{d or '01'}"
    return f"{date}T{hh}:{mm or '00'}:{ss or '00'}" if hh else date


def pdf_facts(doc: pymupdf.Document) -> DocumentFacts:
    """The info dictionary of an open PDF, and its page count."""
    try:
        meta = doc.metadata or {}
    except Exception:  # unreadable metadata never fails an upload; the PDF checks report real damage
        meta = {}
    return DocumentFacts(title=_clean(meta.get("title")), author=_clean(meta.get("author")),
                         created=pdf_date(meta.get("creationDate")), modified=pdf_date(meta.get("modDate")),
                         page_count=doc.page_count, source_kind="pdf")


def _office(data: bytes) -> DocumentFacts:
    core = _zip_xml(data, "docProps/core.xml")
    return DocumentFacts(title=_text(core, f"{_DC}title"), author=_text(core, f"{_DC}creator"),
                         created=_text(core, f"{_DCTERMS}created"), modified=_text(core, f"{_DCTERMS}modified"))


def _odf(data: bytes) -> DocumentFacts:
    meta = _zip_xml(data, "meta.xml")
    return DocumentFacts(title=_text(meta, f"{_DC}title"),
                         author=_text(meta, f"{_META}initial-creator", f"{_DC}creator"),
                         created=_text(meta, f"{_META}creation-date"), modified=_text(meta, f"{_DC}date"))


def _epub(data: bytes) -> DocumentFacts:
    container = _zip_xml(data, "META-INF/container.xml")
    rootfile = None if container is None else container.find(f".//{_CONTAINER}rootfile")
    opf = _zip_xml(data, rootfile.get("full-path", "")) if rootfile is not None else None
    return DocumentFacts(title=_text(opf, f"{_DC}title"), author=_text(opf, f"{_DC}creator"),
                         created=_text(opf, f"{_DC}date"))


def _html(text: str) -> DocumentFacts:
    from mmrag.ingest.convert.html_safe import sanitize_html
    title = sanitize_html(text[:_XML_MAX])[1]
    author = re.search(r"<meta\s+name=[\"']author[\"']\s+content=[\"']([^\"']*)", text[:65536], re.I)
    return DocumentFacts(title=_clean(title), author=_clean(author.group(1) if author else None))


def _email(data: bytes) -> DocumentFacts:
    from mmrag.ingest.convert.mail_page import parse_email
    msg = parse_email(data)
    created = None
    with contextlib.suppress(TypeError, ValueError):
        created = parsedate_to_datetime(str(msg["Date"])).isoformat() if msg["Date"] else None
    return DocumentFacts(title=_clean(str(msg["Subject"] or "")), author=_clean(str(msg["From"] or "")),
                         created=created)


def _own_facts(data: bytes, name: str) -> DocumentFacts:
    from mmrag.ingest.sniff import decode_text
    if name in _OFFICE_KINDS:
        return _office(data)
    if name in _ODF_KINDS:
        return _odf(data)
    if name == "epub":
        return _epub(data)
    if name == "html":
        return _html(decode_text(data))
    if name == "eml":
        return _email(data)
    if name == "md":
        heading = _MD_HEADING.search(decode_text(data)[:65536])
        return DocumentFacts(title=_clean(heading.group(1)) if heading else None)
    return DocumentFacts()  # a PDF's own metadata is its info dictionary (below)


def file_facts(data: bytes, kind: Kind, pdf: pymupdf.Document | None = None) -> DocumentFacts:
    """Facts from the file's own metadata; what it lacks is taken from the open PDF its pages render from
    (the upload itself, or its conversion: a conversion's dates are its own, not the document's)."""
    facts = _own_facts(data, kind.name)
    if pdf is not None:
        info = pdf_facts(pdf)
        for field in ("title", "author", "created", "modified") if kind.name == "pdf" else ("title", "author"):
            if getattr(facts, field) is None:
                setattr(facts, field, getattr(info, field))
        facts.page_count = info.page_count
    facts.source_kind = kind.name
    return facts
