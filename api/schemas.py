"""Request and response bodies of every route (the OpenAPI contract): errors, corpora, documents,
search, jobs, answers, evaluations, keys (health: api/health_schemas.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from mmrag.config import CorpusConfig
from mmrag.keys import Scope
from mmrag.spaces.registry import check_space_name, page_spaces
from mmrag.types import MAX_PREFETCH_LIMIT, MAX_RRF_K, MAX_TOP_K, MAX_WEIGHT, Fusion, SearchKind

SQLITE_INT = 2**63 - 1  # the largest integer SQLite keeps
FILTER_KEY = r"^[A-Za-z0-9_-]+(\[[0-9]*\])?(\.[A-Za-z0-9_-]+(\[[0-9]*\])?)*$"  # a payload key path (store.base)
JSON_INT = 2**53  # integers in payloads and filters: exact as JSON numbers everywhere (the store's floats too)
BoundedInt = Annotated[int, Field(ge=-JSON_INT, le=JSON_INT)]
BoundedFloat = Annotated[float, Field(allow_inf_nan=False, ge=-1e300, le=1e300)]
MetadataValue = Annotated[
    Annotated[str, Field(max_length=10_000)] | BoundedInt | BoundedFloat | bool
    | Annotated[list[Annotated[str, Field(max_length=10_000)]], Field(max_length=1000)]
    | Annotated[list[BoundedInt], Field(max_length=1000)],
    Field(description="A string, an integer, a number, a boolean, or a list of strings or of integers")]
UploadMetadata = Annotated[dict[Annotated[str, Field(min_length=1, max_length=200)], MetadataValue],
                           Field(max_length=100)]
DocumentId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$",
                                  description="A document id (hex)")]
MAX_DOCUMENT_IDS = 1000


class ErrorBody(BaseModel):
    """Every error response has this shape."""

    error: str  # stable code, e.g. not_found, too_large
    message: str  # what was wrong and what is allowed
    detail: dict[str, Any] = {}


class CorpusCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

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


class WordOut(BaseModel):
    text: str
    box: tuple[float, float, float, float] = Field(..., description="Normalised (x0, y0, x1, y1) in [0, 1]")


class PageDetailOut(PageOut):
    document_id: str
    filename: str
    section: list[str] = Field(default_factory=list, description="Headings in force on the page, outermost first")
    text: str = Field(..., description="The page's words in reading order")
    words: list[WordOut] = Field(..., description="Each word with its box")


class DocumentDetail(DocumentOut):
    pages: list[PageOut]


class FileError(BaseModel):
    filename: str
    error: str
    message: str


SpaceName = Annotated[str, AfterValidator(check_space_name)]  # a registered space (the OpenAPI enum: api/contract.py)
Weight = Annotated[float, Field(ge=0, le=MAX_WEIGHT)]


class PageRange(BaseModel):
    """Inclusive 1-based page numbers."""

    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

    first: int = Field(1, ge=1, le=1_000_000, description="First page (1-based)")
    last: int = Field(1_000_000, ge=1, le=1_000_000,
                      description="Last page (inclusive); a range with last < first holds no page (no results)")


class SearchOptions(BaseModel):
    """Everything about a search but the query itself (also the ``options`` part of an image upload)."""

    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

    top_k: int = Field(10, ge=1, le=MAX_TOP_K,
                       description="Results to return, 1..MMRAG_RETRIEVE__MAX_TOP_K (default 100)")
    spaces: list[SpaceName] | None = Field(
        None, min_length=1, description="Spaces to use (text: MiniLM dense, bm25: sparse, clip: CLIP/SigLIP dense, "
                                        "colpali: late interaction; document: ranks documents, so only beside a "
                                        "page space); default: all of the corpus's spaces")
    weights: dict[SpaceName, Weight] | None = Field(
        None, description=f"RRF weight per space, 0..{MAX_WEIGHT} (default 1); only for spaces the request uses")
    prefetch_limit: int | None = Field(
        None, ge=1, le=MAX_PREFETCH_LIMIT, description="Candidates each space contributes before fusion and rerank, "
                                           "up to MMRAG_RETRIEVE__MAX_PREFETCH_LIMIT (less than top_k counts as "
                                           "top_k); default MMRAG_RETRIEVE__PREFETCH_LIMIT")
    rrf_k: int | None = Field(
        None, ge=1, le=MAX_RRF_K, description="RRF constant k: score = sum over spaces of 1 / (rank / weight + k - 1) "
                                         "(Qdrant's weighted RRF); small k lets weights and top ranks count more; "
                                         "default MMRAG_RETRIEVE__RRF_K")
    fusion: Fusion | None = Field(
        None, description="Fusion of the spaces' candidates: dbsf (distribution-based score fusion) or rrf "
                          "(reciprocal rank, the one that takes weights); default MMRAG_RETRIEVE__FUSION (dbsf), "
                          "rrf when weights are given")
    document_ids: list[DocumentId] | None = Field(None, min_length=1, max_length=MAX_DOCUMENT_IDS,
                                                  description="Only these documents (at most 1000)")
    metadata: dict[Annotated[str, Field(min_length=1, max_length=200, pattern=FILTER_KEY)], MetadataValue] = Field(
        default_factory=dict, max_length=100,  # pydantic states a key's pattern as patternProperties only:
        json_schema_extra={"propertyNames": {"minLength": 1, "maxLength": 200, "pattern": FILTER_KEY}},  # no other
        description="Payload filters: field -> value or list of values; a field name holds only ASCII letters, "
                    "digits, '_' and '-' (dots separate nested fields: doc.periods)")
    pages: PageRange | None = Field(None, description="Only pages in this range")
    kinds: list[SearchKind] | None = Field(
        None, min_length=1, description="Only these kinds: PDF pages, standalone images")
    explain: bool = Field(False, description="Return per-space ranks and scores (and the MaxSim rerank score)")

    @field_validator("spaces")
    @classmethod
    def _a_page_space(cls, spaces: list[str] | None) -> list[str] | None:
        if spaces is not None and not set(spaces) & set(page_spaces()):
            raise ValueError(f"the document space ranks documents, not pages: name a page space too "
                             f"({', '.join(page_spaces())})")
        return spaces


class SearchIn(SearchOptions):
    query: str = Field("", max_length=10_000, description="Text query (may be empty when an image is given)")
    image_base64: str | None = Field(
        None, min_length=4, max_length=30_000_000,
        description="Base64 image query (PNG, JPEG, WebP, TIFF, BMP, GIF): pages like this image; only for a corpus "
                    "with an image space (clip, colpali) that the request uses (else 400, before it is decoded)")
    image_page_id: str | None = Field(
        None, min_length=1, max_length=64, pattern=r"^[0-9a-f]+$",
        description="Query by the image of a page already in the corpus (its page id)")


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
    section: list[str] = Field(default_factory=list,
                               description="The page's section path: headings in force on it, outermost first")
    image_url: str
    thumbnail_url: str


class SearchOut(BaseModel):
    results: list[EvidenceOut]
    timings: dict[str, float]


JobStateName = Literal["queued", "running", "done", "failed", "cancelled"]
FileStateName = Literal["queued", "running", "done", "exists", "failed", "cancelled"]


class JobFileOut(BaseModel):
    index: int
    filename: str
    document_id: str
    state: FileStateName
    pages: int = Field(description="Pages of the file (0 until it is planned)")
    pages_done: int
    error: str | None = Field(None, description="Stable error code when the file failed")
    message: str | None = Field(None, description="Why the file failed")


class JobOut(BaseModel):
    id: str
    corpus: str
    state: JobStateName
    pages_total: int
    pages_done: int
    pages_failed: int
    files: list[JobFileOut]
    errors: list[FileError] = Field(description="One entry per failed file, with its reason")
    timings: dict[str, float] = Field(description="Seconds per stage, summed over batches (plan, parse, embed, write)")
    created_at: float
    updated_at: float
    finished_at: float | None
    events_url: str


class JobUploadOut(BaseModel):
    """An upload: the job indexing the accepted files, files rejected before it started, and (with
    ``wait=true``) the documents once the job finished."""

    job: JobOut | None
    documents: list[DocumentOut] = []
    errors: list[FileError] = []


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

    question: str = Field(..., min_length=1, max_length=4000, description="The question")
    top_k: int = Field(5, ge=1, le=50, description="Pages retrieved as candidate evidence")
    visual_token_budget: int | None = Field(
        None, ge=0, le=65_536, description="Visual tokens for all evidence images together (e.g. 280, 560, 1120); "
        "pages are resized to fit. Default: MMRAG_VLM__VISUAL_TOKEN_BUDGET")
    max_new_tokens: int | None = Field(None, ge=1, le=8192, description="Cap on generated tokens")
    document_ids: list[DocumentId] | None = Field(None, min_length=1, max_length=MAX_DOCUMENT_IDS,
                                                  description="Only use these documents (at most 1000)")
    stream: bool = Field(True, description="true: Server-Sent Events (evidence, token..., done); false: one JSON body")


class CitationOut(BaseModel):
    n: int
    document_id: str
    filename: str
    page: int
    page_id: str
    visual_tokens: int = 0


class UsageOut(BaseModel):
    prompt_tokens: int = Field(..., description="The VLM's prompt tokens (visual included); extractive: the "
                                                "retrieval query's words")
    completion_tokens: int = Field(..., description="Generated tokens; extractive: the answer's words")
    unit: Literal["tokens", "words"] = Field(..., description="What is counted")


class AnswerOut(BaseModel):
    answer: str
    mode: str = Field(..., description="'vlm', or 'extractive' when no VLM is configured/available")
    citations: list[CitationOut]
    timings: dict[str, float]
    notice: str = ""
    usage: UsageOut | None = None
    finish_reason: Literal["stop", "length"] = Field("stop", description="length: the answer reached max_new_tokens")


class EvaluationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

    suite: str = Field(..., min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                       description="Name of a suite folder under eval/suites (GET /evaluations/suites)")
    variant: str | None = Field(None, min_length=1, max_length=100,
                                description="A named variant of the suite (e.g. bm25, dense)")


class EvaluationOut(BaseModel):
    id: str
    suite: str
    variant: str | None
    corpus: str = Field(..., description="The corpus the suite ingests into and searches")
    state: str = Field(..., description="queued | running | done | failed")
    stage: str
    done: int
    total: int
    message: str
    error: str
    metrics: dict[str, float]
    created_at: float
    finished_at: float | None
    report_url: str


class CompareIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    baseline: str = Field(..., min_length=1, max_length=64,
                          description="Id of the run to compare against (A); the run of the path is B")


class ComparedRun(BaseModel):
    id: str
    label: str = Field(..., description="The run and the spaces it searched")
    config: dict[str, Any] = Field(..., description="The run's configuration, as in its report")


class MetricComparison(BaseModel):
    mean_a: float
    mean_b: float
    delta: float = Field(..., description="mean(B - A) over the queries both runs scored")
    ci_low: float = Field(..., description="Lower bound of the paired bootstrap interval of delta")
    ci_high: float = Field(..., description="Upper bound of the paired bootstrap interval of delta")
    p_value: float = Field(..., description="Two-sided paired randomisation (sign-flip) test")
    n: int = Field(..., description="Paired queries")


class CompareOut(BaseModel):
    kind: str = Field("compare")
    schema_version: int
    suite: str
    a: ComparedRun
    b: ComparedRun
    paired_items: int
    only_in_a: list[str]
    only_in_b: list[str]
    statistics: dict[str, Any] = Field(..., description="Bootstrap samples, confidence, seed and the test used")
    metrics: dict[str, MetricComparison] = Field(..., description="Metric name -> B against A")


class AdminKeyCreate(BaseModel):
    """An admin key: every corpus, keys and corpus creation included; it has no corpus."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["admin"] = Field(..., description="admin: everything")
    corpus: None = Field(None, description="None: an admin key covers every corpus")
    name: str = Field("", max_length=200, description="Free text for people (who holds the key)")


class CorpusKeyCreate(BaseModel):
    """A write or read key of one corpus."""

    model_config = ConfigDict(extra="forbid")

    scope: Literal["write", "read"] = Field(..., description="write (upload, delete, jobs on the corpus) or read "
                                                             "(list, search, answer, pages, job progress, reports)")
    corpus: str = Field(..., min_length=1, max_length=63, pattern=r"^[a-z0-9][a-z0-9_-]*$",
                        description="The corpus: the key ends when the corpus is deleted")
    name: str = Field("", max_length=200, description="Free text for people (who holds the key)")


KeyCreate = Annotated[AdminKeyCreate | CorpusKeyCreate, Field(discriminator="scope")]


class KeyOut(BaseModel):
    id: str
    prefix: str = Field(..., description="The start of the key, to recognise it")
    scope: Scope
    corpus: str | None = Field(..., description="The corpus of a write or read key (None: admin); the key is "
                                                "revoked when that corpus is deleted")
    name: str
    created_at: float
    revoked_at: float | None


class KeyCreated(KeyOut):
    key: str = Field(..., description="The key itself: shown only now, stored only as a hash")
