"""An upload, checked and made renderable: what it is, and the PDF its pages come from.

:func:`inspect_upload` is the synchronous check made before a job starts (kind from the bytes,
ZIP container limits, XML entity declarations, worksheet rows, CSV lines, email attachments, fields and
links that include other files): each
refusal names the limit; the kind it finds travels with the upload (``Manifest.kind``), so the checks
run once. :func:`prepare_source` is the job's ``plan`` work for one file: every kind
that is not a PDF or an image is converted to PDF once (:mod:`mmrag.ingest.convert`, a limited
subprocess), and the pages are then rendered from that PDF exactly like an uploaded PDF; that PDF is
opened once, for its page count, its metadata and its first pages' words (the document's facts).
"""

from __future__ import annotations

from dataclasses import dataclass

import pymupdf

from mmrag.config import IngestConfig
from mmrag.doc_facts import DocumentFacts
from mmrag.errors import CorruptDocument, TooLarge
from mmrag.ingest import pdf
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.convert.references import check_rtf, check_word97
from mmrag.ingest.doc_evidence import FIRST_PAGES, complete_facts
from mmrag.ingest.file_metadata import file_facts
from mmrag.ingest.mail import check_email
from mmrag.ingest.pdf_budget import check_pages
from mmrag.ingest.sniff import SPREADSHEETS, Kind, decode_text, sniff_kind
from mmrag.ingest.zipcheck import check_zip
from mmrag.page_render import RenderSpec

ZIP_KINDS = frozenset({"docx", "docm", "pptx", "pptm", "xlsx", "xlsm", "odt", "odp", "ods", "epub"})


@dataclass(slots=True)
class Source:
    """plan -> parse: the upload's kind and the bytes its pages render from."""

    kind: str  # sniffed kind name (docx, pdf, png, ...), decided once (at upload, else at plan)
    media_type: str  # the upload's media type (stored with the document)
    pages: int  # pages it renders to
    pdf: bytes | None  # the converted PDF; None when the upload itself is a PDF or an image
    facts: DocumentFacts  # title, author, dates, page count read from the file; entities, periods... from its pages
    render: RenderSpec | None = None  # how its PDF pages are rendered (None for images): the page store re-renders


def _check_lines(data: bytes, name: str, config: IngestConfig) -> None:
    lines = decode_text(data, name).count("\n")
    if lines > config.max_sheet_rows:
        raise TooLarge(f"{name} has {lines:,} lines; the limit is {config.max_sheet_rows:,} rows "
                       "(MMRAG_INGEST__MAX_SHEET_ROWS)", detail={"limit": "max_sheet_rows"})


def inspect_upload(data: bytes, name: str, config: IngestConfig) -> Kind:
    """The kind of an upload after the checks that need no conversion; raises InvalidInput subclasses."""
    kind = sniff_kind(data, name)
    if kind.name in ZIP_KINDS:
        check_zip(data, name, config)
    elif kind.name in ("csv", "tsv"):
        _check_lines(data, name, config)
    elif kind.name == "eml":
        check_email(data, name, config)
    elif kind.name == "rtf":
        check_rtf(data, name)  # fields and links that include other files (ZIP kinds: in check_zip)
    elif kind.name == "doc":
        check_word97(data, name)
    return kind


def _open_converted(converted: bytes, kind: Kind, name: str, config: IngestConfig) -> pymupdf.Document:
    try:
        doc = pymupdf.open("pdf", converted)
    except Exception as exc:
        raise CorruptDocument(f"{name}: the converted {kind.name} file is not a readable PDF ({exc})") from exc
    n = doc.page_count
    if n > config.max_pages:
        doc.close()
        what = "a spreadsheet" if kind.name in SPREADSHEETS else f"the {kind.name} file"
        raise TooLarge(f"{name}: {what} renders to more than {config.max_pages} pages; the limit is "
                       f"{config.max_pages} (MMRAG_INGEST__MAX_PAGES)", detail={"limit": "max_pages"})
    if n == 0:
        doc.close()
        raise CorruptDocument(f"{name}: the {kind.name} file converts to no pages (empty document)")
    return doc


def convert_upload(data: bytes, name: str, config: IngestConfig,
                   checked: Kind | None = None) -> tuple[Kind, bytes | None]:
    """The upload's kind and, for a kind that is neither a PDF nor an image, its conversion to PDF (once, in
    the converter jail). ``checked``: the kind :func:`inspect_upload` found when the upload was accepted (its
    checks passed); None: sniff and check here."""
    kind = checked or inspect_upload(data, name, config)
    return kind, None if kind.family in ("pdf", "image") else convert_to_pdf(data, kind.name, config)


def read_source(data: bytes, kind: Kind, converted: bytes | None, name: str, config: IngestConfig) -> Source:
    """Open the PDF the pages render from (``converted``, else the upload), count pages, read the file's
    facts: untrusted drawing, run in a parse worker by the plan stage (:mod:`mmrag.jobs.parse_pool`)."""
    if kind.family == "image":
        facts = complete_facts(DocumentFacts(page_count=1, source_kind=kind.name), name, None)
        return Source(kind.name, kind.media_type, 1, None, facts)
    doc = pdf.open_pdf(data, config) if converted is None else _open_converted(converted, kind, name, config)
    with doc:  # the one open of the PDF the pages render from
        check_pages(doc, 1, FIRST_PAGES, config)  # the pages the facts are read from, before they are drawn
        facts = complete_facts(file_facts(data, kind, doc), name, doc, config)
        return Source(kind.name, kind.media_type, doc.page_count, converted, facts, _spec(config))


def prepare_source(data: bytes, name: str, config: IngestConfig, checked: Kind | None = None) -> Source:
    """Convert when needed (once), count pages, read the file's facts, in this process (the plan stage runs
    the reading part in a parse worker instead)."""
    kind, converted = convert_upload(data, name, config, checked)
    return read_source(data, kind, converted, name, config)


def _spec(config: IngestConfig) -> RenderSpec | None:
    """How the page store re-renders the pages; None keeps every page's image as a file instead."""
    return None if config.keep_page_files else RenderSpec(config.dpi, config.max_page_pixels)
