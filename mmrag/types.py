"""Typed messages passed between stages.

Stages exchange these small dataclasses, never loose dicts. Coordinates of word
boxes are normalised to [0, 1] of the page (x0, y0, x1, y1, origin top-left), so
they are independent of the render DPI.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

BBox = tuple[float, float, float, float]


class Modality(enum.StrEnum):
    """What an embedder (or a query) can carry."""

    TEXT = "text"
    IMAGE = "image"


class TextSource(enum.StrEnum):
    """Where a page's text came from."""

    LAYER = "layer"  # the PDF's own text layer
    OCR = "ocr"  # Tesseract
    NONE = "none"  # no text (blank page, OCR found nothing)


class EvidenceKind(enum.StrEnum):
    """What a retrieved item shows."""

    PAGE = "page"  # a page of a PDF, rendered
    IMAGE = "image"  # a standalone uploaded image
    TEXT = "text"  # a text snippet (with word boxes) of a page or image


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    bbox: BBox  # normalised (x0, y0, x1, y1) in [0, 1]
    confidence: float | None = None  # OCR confidence 0..100; None for a text layer


@dataclass(frozen=True, slots=True)
class TableSpan:
    """Where a table's rows are in a page's words, and its column labels (mmrag.ingest.tables)."""

    start: int  # index of the table's first word in Page.words
    end: int  # one past its last word
    header: str  # the column labels as one line ("Three Months Ended June 25, 2022 | ..."); "" when none


def section_line(section: list[str]) -> str:
    """A page's section path (:attr:`Page.context`) as one line of text (what the text spaces embed and
    index with a page)."""
    return " > ".join(section)


@dataclass(slots=True)
class Page:
    """One page of a document (a PDF page or a whole image)."""

    id: str  # content-derived: sha256(document id, page number)[:32]
    document_id: str
    number: int  # 1-based
    width: int  # rendered image size in pixels
    height: int
    image_hash: str  # sha256 of the rendered image bytes: key for caches
    text: str
    words: list[Word]
    text_source: TextSource
    image_png: bytes | None = None  # rendered page; dropped once written to the page store
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    context: list[str] = field(default_factory=list)  # section path: headings in force, outermost first
    table_header: list[str] = field(default_factory=list)  # column labels of a table continued from the page before
    tables: list[TableSpan] = field(default_factory=list)  # its tables' rows in ``words`` (for embedding; not stored)
    bm25_text: str | None = None  # what BM25 indexes instead of ``text`` (tables ``labelled``); None: ``text``

    @property
    def indexed_text(self) -> str:
        """The text BM25 indexes (with :func:`mmrag.spaces.bm25_text.bm25_text`'s section line)."""
        return self.text if self.bm25_text is None else self.bm25_text


@dataclass(slots=True)
class Document:
    """A parsed upload: its identity and its pages."""

    id: str  # sha256 of the bytes, first 32 hex chars
    filename: str
    media_type: str  # e.g. application/pdf, image/png
    size_bytes: int
    pages: list[Page]
    metadata: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A window of a page's words: the unit of the text spaces."""

    id: str  # point id source: sha256(page id, chunk index)
    page_id: str
    document_id: str
    page_number: int
    index: int  # 0-based within the page
    text: str
    boxes: list[BBox]  # one normalised box per word


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """A stored document as listed by the catalog."""

    id: str
    corpus: str
    filename: str
    media_type: str
    size_bytes: int
    page_count: int
    metadata: dict[str, Any]
    created_at: float  # unix seconds


@dataclass(frozen=True, slots=True)
class PageInfo:
    """A stored page as listed by the catalog."""

    id: str
    document_id: str
    number: int
    width: int
    height: int
    image_hash: str
    text_source: TextSource
    text_chars: int
    context: list[str] = field(default_factory=list)  # section path (Page.context)
    table_header: list[str] = field(default_factory=list)  # labels of a continued table (Page.table_header)


@dataclass(slots=True)
class Evidence:
    """One retrieved item, merged across spaces."""

    kind: EvidenceKind
    corpus: str
    document_id: str
    filename: str
    page_id: str
    page: int  # 1-based
    score: float  # the final (fused or reranked) score
    snippet: str = ""
    boxes: list[BBox] = field(default_factory=list)  # word boxes of the snippet
    scores: dict[str, float] = field(default_factory=dict)  # space -> raw score
    ranks: dict[str, int] = field(default_factory=dict)  # space -> 1-based rank (explain)
    metadata: dict[str, Any] = field(default_factory=dict)
    section: list[str] = field(default_factory=list)  # the page's section path (Page.context)

    def as_json(self) -> dict[str, Any]:
        """The evidence as JSON-safe data: the fields of a REST search result (without its URLs)."""
        return {"kind": self.kind.value, "document": self.filename, "document_id": self.document_id,
                "page": self.page, "page_id": self.page_id, "score": self.score, "snippet": self.snippet,
                "boxes": [list(b) for b in self.boxes], "scores": dict(self.scores), "ranks": dict(self.ranks),
                "metadata": dict(self.metadata), "section": list(self.section)}


SearchKind = Literal["page", "image"]
"""The evidence kinds a search may be limited to (no evidence of kind ``text`` is stored yet)."""
SEARCH_KINDS: tuple[str, ...] = get_args(SearchKind)
Fusion = Literal["dbsf", "rrf"]
"""How a search fuses its spaces' candidates: distribution-based score fusion, or (weighted) reciprocal rank."""
FUSIONS: tuple[str, ...] = get_args(Fusion)
MAX_TOP_K = 1000  # no search returns more results (``retrieve.max_top_k`` may lower it)
MAX_PREFETCH_LIMIT = 10_000  # no space contributes more candidates (``retrieve.max_prefetch_limit`` may lower it)
MAX_RRF_K = 1000  # a search's RRF constant: 1..MAX_RRF_K
MAX_WEIGHT = 100  # a space's RRF weight in a search: 0..MAX_WEIGHT
# The bounds of a search, declared once: the REST types (api/schemas.py, hence the OpenAPI), the CLI's help and
# the retriever's own check (Retriever.validate, for in-process callers) read them from here.


@dataclass(slots=True)
class SearchRequest:
    """A query against one corpus. Text, an image, or both."""

    query: str = ""  # text query (may be empty when an image is given)
    image: bytes | None = None  # encoded image query (PNG/JPEG/...)
    top_k: int = 10
    document_ids: list[str] | None = None  # restrict to these documents
    metadata: dict[str, Any] = field(default_factory=dict)  # payload equality filters
    spaces: list[str] | None = None  # registered space names (mmrag.spaces.registry); None = every space the corpus has
    weights: dict[str, float] | None = None  # RRF weight per space (default 1.0)
    explain: bool = False  # fill Evidence.ranks/scores per space
    image_page_id: str | None = None  # query by an existing page's image ("pages like this one")
    pages: tuple[int, int] | None = None  # only pages numbered first..last (1-based, inclusive)
    kinds: list[str] | None = None  # only these evidence kinds ("page", "image"); None = all
    prefetch_limit: int | None = None  # candidates per space before fusion; None = RetrieveConfig.prefetch_limit
    rrf_k: int | None = None  # RRF constant; None = RetrieveConfig.rrf_k
    fusion: str | None = None  # "dbsf" | "rrf"; None = RetrieveConfig.fusion (RRF whenever weights are given)


@dataclass(slots=True)
class SearchResult:
    """Ranked evidence and how long each stage took."""

    evidence: list[Evidence]
    timings: dict[str, float]  # stage -> seconds (embed_query, query, hydrate, total)
