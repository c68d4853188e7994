"""What tells one document from another: facts read from the file and its first pages.

Shared by the every-document-kind work (title, author, dates, page count read from the file's own
metadata: PDF info, Office core properties, EPUB/HTML titles, email headers) and the
document-level retrieval work (entities, periods, versions found in the file name and text).
Stored per document in the catalog and in each page's payload (``doc`` key), so they are
filterable and shown in results.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class DocumentFacts:
    title: str | None = None  # from the file's metadata, else its first heading / first line
    subject: str | None = None  # the file metadata's subject and keywords (evidence of its period and form)
    author: str | None = None  # file metadata (PDF /Author, docProps/core.xml creator, email From)
    created: str | None = None  # ISO 8601 date or datetime from the file's metadata
    modified: str | None = None  # ISO 8601
    page_count: int = 0
    source_kind: str = ""  # detected kind: pdf, image, docx, pptx, xlsx, odt, html, md, txt, csv, epub, eml, ...
    entities: list[str] = field(default_factory=list)  # organisations / products named as the document's subject
    periods: list[str] = field(default_factory=list)  # normalised periods / dates the document is about
    versions: list[str] = field(default_factory=list)  # version strings (v2.1, Rev. C, 2023 edition)
    labels: list[str] = field(default_factory=list)  # document type labels ("Form 10-Q", "user guide")
    date: str | None = None  # ISO date the document is about (its main period's end; else created)
    form: str | None = None  # what kind of document it is: "10-K", "10-Q", "8-K", "earnings release", "user guide"
    tickers: list[str] = field(default_factory=list)  # trading symbols of the main entity (its cover's)
    comparatives: list[str] = field(default_factory=list)  # prior periods shown beside the reporting period
    calendar: list[str] = field(default_factory=list)  # calendar quarters of its fiscal quarter ("2023-Q2")
    fiscal_year_end: int | None = None  # month its fiscal year ends in, when the document tells (1..12)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> DocumentFacts:
        known = {k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class StoredFacts:
    """One stored document's facts, as its corpus lists them (:meth:`mmrag.catalog.documents.DocumentTable.facts`)."""

    document_id: str
    filename: str
    facts: DocumentFacts
    pages: int = 0  # its page count (0: not read)
