"""Request and response bodies (the OpenAPI contract)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from mmrag.config import CorpusConfig

MetadataValue = str | int | float | bool | list[str] | list[int]


class CorpusCreate(BaseModel):
    name: str = Field(..., min_length=1, max_length=63, pattern=r"^[a-z0-9][a-z0-9_-]*$",
                      description="1-63 characters of a-z, 0-9, '-', '_'")
    config: CorpusConfig | None = Field(None, description="Spaces and options; defaults to every available space")


class CorpusOut(BaseModel):
    name: str
    config: CorpusConfig
    documents: int
    pages: int
    created_at: float


class DocumentOut(BaseModel):
    id: str = Field(..., description="sha256 of the file's bytes (32 hex chars)")
    filename: str
    media_type: str
    size_bytes: int
    page_count: int
    metadata: dict[str, Any]
    created_at: float
    status: Literal["created", "exists", "stored"] = "stored"
    timings: dict[str, float] = {}


class PageOut(BaseModel):
    id: str
    number: int
    width: int
    height: int
    text_source: str
    text_chars: int
    image_url: str
    thumbnail_url: str


class DocumentDetail(DocumentOut):
    pages: list[PageOut]


class FileError(BaseModel):
    filename: str
    error: str
    message: str


class UploadOut(BaseModel):
    documents: list[DocumentOut]
    errors: list[FileError]


class SearchIn(BaseModel):
    query: str = Field("", max_length=10_000, description="Text query (may be empty when image_base64 is given)")
    image_base64: str | None = Field(None, description="Base64 image query (PNG, JPEG, WebP, TIFF, BMP, GIF)")
    top_k: int = Field(10, ge=1, le=1000, description="Results to return (bounded by MMRAG_RETRIEVE__MAX_TOP_K)")
    document_ids: list[str] | None = Field(None, description="Only these documents")
    metadata: dict[str, MetadataValue] = Field(default_factory=dict,
                                               description="Payload filters: field -> value or list of values")
    spaces: list[Literal["text", "bm25", "clip", "colpali"]] | None = Field(
        None, description="Spaces to use; default: all of the corpus's spaces")
    weights: dict[str, float] | None = Field(None, description="RRF weight per space, 0..100 (default 1)")
    explain: bool = Field(False, description="Return per-space ranks and scores")


class EvidenceOut(BaseModel):
    kind: str
    document_id: str
    document: str = Field(..., description="File name")
    page_id: str
    page: int = Field(..., description="1-based page number")
    score: float
    snippet: str
    boxes: list[tuple[float, float, float, float]] = Field(
        default_factory=list, description="Normalised word boxes (x0, y0, x1, y1) of the snippet")
    scores: dict[str, float] = {}
    ranks: dict[str, int] = {}
    metadata: dict[str, Any] = {}
    image_url: str
    thumbnail_url: str


class SearchOut(BaseModel):
    results: list[EvidenceOut]
    timings: dict[str, float]


class HealthOut(BaseModel):
    status: str
    version: str
    spaces: dict[str, Any]
    unavailable: dict[str, str]
    store: str
