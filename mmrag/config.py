"""Configuration: pydantic models with bounds and a docstring per field.

One :class:`Settings` object (env prefix ``MMRAG_``, nested fields with ``__``,
e.g. ``MMRAG_INGEST__DPI=200``) is built by the shells at start-up with
:func:`load_settings`; nothing here is created at import time.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from mmrag.embed_service_config import EmbedServiceConfig
from mmrag.errors import InvalidInput
from mmrag.retrieve_config import RetrieveConfig
from mmrag.vlm_config import VLMConfig

MiB = 1024 * 1024
HNSW_EF = 800  # StoreConfig.hnsw_ef's default: measured at 50,000 pages (docs/retrieval.md, "HNSW and recall")
FULL_SCAN_POINTS = 100_000  # StoreConfig.full_scan_points's default (the same measurement)
MAX_HNSW_EF = 10_000
ENV_FILE = ".env"  # settings also read from this file in the working folder (the environment wins)


class StoreConfig(BaseModel):
    """Where vectors live."""

    url: str | None = None
    """Qdrant server URL (e.g. http://qdrant:6333). None: the embedded engine under the data folder."""
    api_key: str | None = None
    """API key for a Qdrant server."""
    engine: Literal["edge", "local"] = "edge"
    """Embedded engine when no URL is set: ``edge`` (qdrant-edge-py, Rust, default) or
    ``local`` (qdrant-client's pure-numpy local mode; slow, for tests of the client path)."""
    timeout_s: float = Field(30.0, gt=0)
    """Timeout for calls to a Qdrant server."""
    full_scan_points: int = Field(FULL_SCAN_POINTS, ge=0, le=100_000_000)
    """A collection of at most this many points (pages) is searched by a full scan of its dense and multi-vector
    spaces (Qdrant's ``exact``): the exhaustive answer, instead of walking the HNSW graph. Measured at 50,000
    pages (docs/retrieval.md, "HNSW and recall"): the text space's HNSW over MaxSim multi-vectors kept 0.63 of
    the exhaustive top 10 with the engine's defaults and 0.96 at ``hnsw_ef`` 1600; the scan made the default
    search's p50 86 ms against 60 ms with HNSW at ef 800 (load ~2), a cost that grows with the collection.
    0: always HNSW where the engine built one."""
    hnsw_ef: int | None = Field(HNSW_EF, ge=1, le=MAX_HNSW_EF)
    """Above ``full_scan_points``: candidates an HNSW search of a dense or multi-vector space keeps while it walks
    the graph (Qdrant's ``hnsw_ef``; a stage asking for more results uses its limit). Higher finds more of the
    exhaustive answer and costs more per search; None leaves it to the engine (the index's ``ef_construct``, 100).
    At 50,000 pages the text space kept 0.63 / 0.75 / 0.91 / 0.96 of the exhaustive top 10 at the engine's
    100 / 400 / 800 / 1600. Segments under the engine's indexing threshold (about 10 MB of vectors: the shared
    suites' corpora, up to a few thousand pages) have no graph and are scanned anyway."""


class IngestConfig(BaseModel):
    """Limits and quality knobs of decoding, rendering and OCR."""

    dpi: int = Field(144, ge=36, le=600)
    """Render resolution of PDF pages."""
    max_page_pixels: int = Field(12_000_000, ge=10_000)
    """Pixel cap of a rendered page; pages that would be larger render at a lower DPI."""
    max_upload_bytes: int = Field(200 * MiB, ge=1024)
    """Largest accepted file."""
    max_pages: int = Field(2000, ge=1)
    """Most pages accepted in one document."""
    max_image_pixels: int = Field(64_000_000, ge=10_000)
    """Largest decoded image (width x height); larger is rejected as a decompression bomb."""
    ocr: bool = True
    """Run Tesseract on pages without a usable text layer."""
    ocr_languages: str = "eng"
    """Tesseract language codes, joined with '+'."""
    ocr_dpi: int = Field(300, ge=72, le=600)
    """Resolution at which PDF pages are rasterised for OCR."""
    figure_ocr: bool = False
    """Also OCR the pictures of pages that have a text layer (charts, screenshots, slides placed as images):
    each image covering ``figure_ocr_min_area`` of the page with almost none of the layer's words in it is read
    by Tesseract and its words join the page's (mmrag/ingest/figure_text.py). Needs ``ocr``. Off by default: on
    mmlongbench-dev it cost 6 % more ingest time and the learned ranker lost on figure questions with it
    (docs/ingest.md, "Words inside pictures")."""
    figure_ocr_min_area: float = Field(0.05, ge=0.0, le=1.0)
    """Least share of the page an image must cover to be read by ``figure_ocr``."""
    figure_ocr_max_regions: int = Field(4, ge=0, le=64)
    """Most images of one page read by ``figure_ocr`` (the largest first)."""
    min_text_chars: int = Field(16, ge=0)
    """A text layer with fewer non-space characters than this is not usable: the page is OCRed."""
    chunk_words: int = Field(120, ge=8, le=2000)
    """Words per text chunk (the text spaces index chunks)."""
    chunk_overlap: int = Field(30, ge=0)
    """Words shared by consecutive chunks."""
    convert_timeout_s: float = Field(120.0, gt=0)
    """Wall-clock limit of converting one non-PDF file to PDF (LibreOffice / PyMuPDF subprocess); killed after."""
    convert_memory_bytes: int = Field(2 * 1024 * MiB, ge=64 * MiB)
    """Address-space limit (RLIMIT_AS) of the conversion subprocess."""
    convert_isolation: Literal["jail", "network", "none"] = "jail"
    """Where converters run (docs/security.md): ``jail`` (bubblewrap: they read only their install and their
    input copy, write only their job folder, no network, uid 65534 when the service is root); ``network``
    (only no network: they read what the service reads); ``none``. A mode this host cannot give refuses
    conversion (503) instead of running with less."""
    convert_dir: Path | None = None
    """Parent of the conversions' job folders (None: the system temp folder). Not the spool: in containers,
    a tmpfs private to the converting process."""
    parse_timeout_s: float = Field(60.0, gt=0, le=3600)
    """Wall clock of one parse call of a PDF or image in its parse worker process: the plan stage's reading
    of a document (page count, metadata, first pages' words), or one page batch (``MMRAG_JOBS__BATCH_PAGES``
    pages: text layer, tables, OCR, renders). Past it the worker is killed and the file fails ``too_complex``."""
    page_timeout_s: float = Field(20.0, gt=0, le=3600)
    """Wall clock of one page of a page batch in the parse worker (text layer, tables, OCR, render); past
    it the worker is killed and the file fails ``too_complex``."""
    document_parse_timeout_s: float = Field(3600.0, gt=0, le=7 * 86400)
    """Total parse time of one document: the parse calls of its plan and of all its page batches, summed
    (thread-seconds: batches parsed at once each count). Checked when each batch starts, with the time of
    the calls finished before it, and watched while it runs; past it the worker is killed and the file fails
    ``too_complex`` (the rest of the job goes on). Bounds how long a long file of slow pages holds a parse
    thread: 2,000 pages of near-limit (``page_timeout_s``) pages would otherwise hold one for hours. Raise it
    for long scanned documents (OCR takes seconds a page)."""
    parse_memory_mb: int = Field(2048, ge=256, le=1024 * 1024)
    """Address-space limit (RLIMIT_AS, MiB) of each parse worker process; a file that needs more fails
    ``too_complex``."""
    parse_workers_idle: int = Field(2, ge=0, le=64)
    """Parse worker processes kept alive between calls (more are started when more parse at once)."""
    parse_worker_calls: int = Field(100, ge=0)
    """Calls a parse worker answers before it is replaced by a fresh one (0: never). What a worker has
    parsed stays in it (parsers' caches, a fragmented heap): in the hour's soak of issue 42 the idle
    workers grew from 175 to 206 MB each; recycling, as docling-serve's users do by hand, bounds that for
    ~1 s of start-up per hundred calls, off the request's path."""
    max_page_draws: int = Field(100_000, ge=1)
    """Most XObject draws one PDF page may make, counting a form each time it is drawn (nested forms
    multiply); checked before the page is drawn (``too_complex``). 4**9 nested draws take ~2.5 s here."""
    max_page_content_bytes: int = Field(64 * MiB, ge=1024)
    """Most content-stream bytes one PDF page draws (decompressed, a form's bytes counted each time it is
    drawn); checked before the page is drawn, inflating at most this much (``too_complex``)."""
    max_zip_entries: int = Field(10_000, ge=1)
    """Most entries in a ZIP container (DOCX, XLSX, ODT, EPUB, ...)."""
    max_unzipped_bytes: int = Field(1024 * MiB, ge=1024)
    """Largest total uncompressed size of a ZIP container's entries."""
    max_zip_ratio: float = Field(200.0, gt=1)
    """Largest compression ratio of one entry (over 1 MiB uncompressed): above it is a zip bomb."""
    max_sheet_rows: int = Field(100_000, ge=1)
    """Most rows in one worksheet (XLSX dimension, CSV/TSV lines); the rendered pages are also capped by max_pages."""
    max_email_attachments: int = Field(100, ge=0)
    """Most attachments of one email; each becomes its own document in the same job."""
    keep_page_files: bool = False
    """Also store every page's PNG as a file (the layout before pages were rendered on demand from the kept
    PDF); the page store then keeps no PDF. For comparison (bench/storage.py) or when disk is cheaper than CPU."""
    tables: bool = True
    """Find tables on PDF pages (numeric columns from the words; ruled grids with PyMuPDF's line finder,
    no layout model: mmrag/ingest/tables.py) and write them into the text layer as rows that keep each
    cell with its row and column labels."""
    table_rows: Literal["chunk-header", "header", "labelled"] = "header"
    """How a table is written into the text layer: ``header``, its column labels once as a header line,
    then each row once; ``chunk-header``, the same text, and a text chunk that starts inside a table is
    embedded (dense space) after the table's header line; ``labelled``, every value preceded by its column
    label (measured in docs/benchmarks.md)."""
    bm25_table_rows: Literal["as-text", "labelled"] = "labelled"
    """What BM25 indexes of a page's tables: ``labelled`` (default), every value preceded by its column
    label whatever ``table_rows`` the text has (so a cell is found by its row and column words, while the
    dense space and the stored text keep the shorter ``table_rows`` form); ``as-text``, the page text as
    it is (measured in docs/benchmarks.md, issue 20)."""


TextPrecision = Literal["float32", "int8", "bf16"]
"""What a text model computed vectors in (recorded per corpus)."""
TextPrecisionSetting = Literal["auto", "float32", "int8", "bf16"]
"""What ``embed.text_precision`` may ask for: ``auto`` (chosen by the CPU) or one precision."""


class EmbedConfig(BaseModel):
    """Which models embed what, and where they run."""

    text_model: str = "st:sentence-transformers/all-MiniLM-L6-v2"
    """Dense text embedder spec (always on)."""
    text_precision: TextPrecisionSetting = "auto"
    """What the text model (``st:`` specs) computes in, for documents and queries alike: ``auto`` (the
    default: chosen by what the CPU has, shown by ``mmrag config`` and ``GET /health``: ``int8`` on x86
    with AVX2 or VNNI and on ARM with dot products, with the kernels exact there, else ``float32``),
    ``int8`` (the transformer exported to ONNX and quantised at first use into ``~/.cache/mmrag``, run by
    ONNX Runtime on the CPU: VNNI's u8s8 kernels, u8u8 on a CPU without VNNI, whose u8s8 saturate),
    ``float32``, or ``bf16`` (torch autocast; refused on a CPU without native bfloat16, where it is ~5x
    slower than float32). Vectors of two precisions are close, not equal: re-ingest after changing it
    (docs/embedding.md, "Text precision")."""
    max_batch_tokens: int = Field(0, ge=0)
    """Most padded tokens (texts x the longest one's tokens) one forward of the text model computes; a
    longer batch is cut, longest texts first. 0 (the default): 2,048 on a CPU, no bound but the batch's
    64 texts on a GPU. A forward's memory grows with its tokens (attention with their square) and ONNX
    Runtime keeps its arena at the largest forward it ever ran: 64 texts of 256 tokens held 1.8 GB for
    good, the 2,048 budget 0.2 GB, and ran 1.06x faster on a CPU (docs/benchmarks.md, "A forward's
    padded-token budget")."""
    clip_model: str | None = "open_clip:ViT-B-32/laion2b_s34b_b79k"
    """CLIP/SigLIP spec for the ``clip`` space; None disables it. Skipped with a warning if it cannot load."""
    colpali_model: str | None = "hf:vidore/colqwen2-v1.0-hf"
    """ColPali-family spec for the ``colpali`` space; None disables it. Skipped with a warning if it cannot load."""
    device: str = "auto"
    """torch device: auto (cuda if available), cpu, cuda, cuda:1, ..."""
    service_url: str | None = None
    """URL of a separate ``mmrag embed-serve`` process. None: embed in-process."""
    timeout_s: float = Field(120.0, gt=0)
    """Timeout for one call to the embedding service."""
    max_text_chars: int = Field(20_000, ge=1)
    """Longest text accepted for embedding (queries and chunks)."""
    backends: dict[str, str] = Field(default_factory=dict)
    """Extra embedder backends, spec prefix -> ``module:attribute`` of a factory ``(name, options)``
    (e.g. ``{"my": "mypkg.embed:load"}`` serves ``my:...`` specs); imported on first use."""

    @model_validator(mode="after")
    def _bf16_runs_natively(self) -> EmbedConfig:
        """A ``bf16`` setting the in-process CPU cannot run natively is refused at start-up (why, and what to
        use); with ``service_url`` the service's machine decides."""
        if self.text_precision == "bf16" and not self.service_url:
            from mmrag import cpu_kernels
            from mmrag.devices import resolve_device

            try:
                cpu_kernels.choose_text_kernels("bf16", cpu_kernels.this_cpu(), device=resolve_device(self.device))
            except InvalidInput as exc:
                raise ValueError(exc.message) from None
        return self


class ApiConfig(BaseModel):
    """The HTTP server."""

    host: str = "127.0.0.1"
    """Interface to bind."""
    port: int = Field(8000, ge=0, le=65535)
    """Port to bind."""
    max_files_per_upload: int = Field(64, ge=1)
    """Most files in one multipart upload."""
    public_url: str = ""
    """Prefix for URLs in responses (empty: relative URLs)."""
    auth: Literal["auto", "required", "off"] = "auto"
    """API keys: ``auto`` (bound to a loopback address) answers without a key only a local request: its peer
    is loopback, its Host a loopback name, it has no Forwarded/X-Forwarded-* header, and a state-changing
    one comes from no other web origin; everything else needs a key (as does every request when bound
    elsewhere). ``required``: always; ``off``: never (keys are ignored). docs/security.md."""
    rate_per_key: float = Field(50.0, ge=0)
    """Requests per second one API key may make on average (token bucket); 0: no limit. Beyond it: 429."""
    rate_burst: int = Field(100, ge=1)
    """Requests one key may make at once before the per-second rate applies."""
    max_jobs_per_key: int = Field(4, ge=0)
    """Unfinished ingestion jobs one API key may have at a time; 0: no limit. Beyond it: 429."""
    max_request_bytes: int = Field(512 * MiB, ge=1024)
    """Largest upload body (all files of an upload together); larger requests are refused before
    they are read (413)."""
    max_json_bytes: int = Field(1 * MiB, ge=1024)
    """Largest body of the other routes (JSON; searches also carry a query image, see
    MMRAG_RETRIEVE__MAX_QUERY_IMAGE_BYTES): larger requests are refused before they are read (413)."""
    max_evaluations_per_key: int = Field(2, ge=0)
    """Unfinished evaluations one API key may have at a time; 0: no limit. Beyond it: 429."""
    image_query_concurrency: int = Field(2, ge=1, le=64)
    """Query images decoded and embedded at a time; further image searches wait their turn."""
    malloc_arenas: int = Field(2, ge=0, le=64)
    """The malloc arenas at most of the server, of each Celery worker and of the embedding service (glibc; 0: its
    default, eight per core): fewer arenas hold less freed memory (mmrag/process_memory.py)."""
    malloc_trim_s: float = Field(30.0, ge=0)
    """Seconds between handing the freed memory of the server, of each Celery worker process and of the
    embedding service back to the system (glibc's ``malloc_trim``); 0: never."""
    log_format: Literal["text", "json"] = "text"
    """``json``: one JSON object per log line (time, level, logger, message, request id, route, status,
    duration). Keys and document text are never logged."""


class JobsConfig(BaseModel):
    """Ingestion jobs: page batches, in-process worker threads, and the optional Celery broker."""

    broker_url: str | None = None
    """Celery broker (e.g. redis://redis:6379/0). None: the embedded runner (worker threads, no broker)."""
    spool_dir: Path | None = None
    """Uploaded bytes and stage outputs (a volume shared by API and workers). None: <data_dir>/spool."""
    batch_pages: int = Field(16, ge=1, le=10_000)
    """Pages per batch: large documents are split so work spreads and a retry redoes one batch."""
    cpu_workers: int = Field(1, ge=1, le=64)
    """Embedded runner: threads that plan and parse (each drives one parse worker process) that one corpus
    may hold at once; the runner starts one more, so another corpus's files never wait behind them."""
    embed_workers: int = Field(1, ge=1, le=16)
    """Embedded runner: threads that embed (each calls the embedder or the embedding service)."""
    corpus_share: int = Field(0, ge=0, le=10_000)
    """Celery: plans and parses one corpus may run at once over all ``cpu`` workers (0: no bound). Below the
    number of ``cpu`` worker processes, the others are always free for the other corpora's turns (the
    embedded runner's ``cpu_workers`` + 1 threads do the same)."""
    parse_ahead: int = Field(2, ge=0, le=1000)
    """Page batches of a file parsed ahead of the one being embedded: parse of batch n+1 overlaps the
    embedding of batch n, and the spool holds at most this many parsed batches waiting (both runners)."""
    plan_ahead: int = Field(4, ge=1, le=10_000)
    """Files of one job whose plan is queued at once; each file's plan, when it ends, queues the next. So a
    job of many files does not fill the ``cpu`` queue ahead of its own corpus's other jobs' files (both
    runners)."""
    parse_nice: int = Field(10, ge=0, le=19)
    """The niceness the parse worker processes (and the converter and OCR processes they start) and the
    embedded runner's parse threads run at: >0 lets the server's request threads and the embed thread (the
    pipeline's bottleneck on a CPU box) take the cores first, so that uploads slow searches less; 0: the
    same priority as the server (docs/jobs.md, "Ingestion yields to queries")."""
    embed_threads: int = Field(0, ge=0, le=256)
    """torch intra-op threads of a process that embeds in-process (the embedded runner, ``mmrag worker
    gpu|all``); 0: torch's own default (one per core). Measured in docs/benchmarks.md (bench.ingest)."""
    max_retries: int = Field(4, ge=0, le=50)
    """Retries of a stage on a transient error (service unavailable, overloaded, I/O)."""
    retry_backoff_s: float = Field(1.0, gt=0)
    """First retry delay; doubles on each retry."""
    visibility_timeout_s: float = Field(3600.0, gt=0)
    """Celery/Redis: an unacknowledged task (its worker died) is redelivered after this long."""
    stall_s: float = Field(300.0, gt=0)
    """The owner re-sends the pending work of a job that made no progress for this long (lost messages)."""


class Settings(BaseSettings):
    """Everything configurable, from MMRAG_* environment variables (and an optional ``.env`` file in the
    working folder; the environment wins). ``mmrag config`` prints them with where each came from."""

    model_config = SettingsConfigDict(env_prefix="MMRAG_", env_nested_delimiter="__", extra="ignore",
                                      env_file=ENV_FILE, env_file_encoding="utf-8")

    data_dir: Path = Path("mmrag-data")
    """The one folder holding the catalog, page images, the embedded store and job state."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)
    retrieve: RetrieveConfig = Field(default_factory=RetrieveConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    vlm: VLMConfig = Field(default_factory=VLMConfig)
    embed_service: EmbedServiceConfig = Field(default_factory=EmbedServiceConfig)
    """The ``mmrag embed-serve`` process (its flags override these)."""
    eval_suites_dir: Path = Path("eval/suites")
    """Folder of evaluation suites that POST /evaluations may run (one sub-folder per suite)."""
    log_level: str = "INFO"
    """Python logging level."""


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment, then apply keyword overrides (CLI flags)."""
    settings = merge_settings(Settings(), {k: v for k, v in overrides.items() if v is not None})
    settings.data_dir = Path(os.path.expanduser(str(settings.data_dir))).resolve()
    return settings


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``base`` with ``override`` applied: mappings merge key by key, anything else replaces (the
    one deep merge: settings overrides, suite variants)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_settings(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """A copy of ``settings`` with nested ``overrides`` applied (``{"embed": {"clip_model": None}}``
    changes that one field), validated again: the one settings merge (CLI flags, suite settings)."""
    data = deep_merge(settings.model_dump(), overrides)
    return type(settings).model_validate(data)


class CorpusConfig(BaseModel):
    """Per-corpus settings, fixed when the corpus is created (they shape its collection)."""

    spaces: list[str] = Field(default_factory=lambda: ["text", "bm25", "clip", "colpali", "document"], min_length=1)
    """Retrieval spaces to index. Spaces whose model cannot be loaded are dropped at creation, with a note."""
    description: str = ""
    """Free text for people."""
    text_model: str | None = None
    """Text embedder spec used for this corpus (recorded at creation)."""
    clip_model: str | None = None
    """CLIP/SigLIP spec used for this corpus (recorded at creation)."""
    colpali_model: str | None = None
    """ColPali-family spec used for this corpus (recorded at creation)."""
    text_precision: TextPrecision | None = None
    """What the text model computed this corpus's vectors in (recorded at creation; None: a corpus created
    before the record, embedded in ``float32``). Queries are embedded at the server's
    ``embed.text_precision``: a different one is close, not equal, and is warned about at start-up."""
    text_kernels: str | None = None
    """With which kernels (``int8/u8s8``, ``int8/u8u8``, ``float32/torch-cpu``, ...: recorded at creation; None: a
    corpus created before the record). A server on another kind of CPU may choose others: warned at start-up."""
    text_datatype: Literal["float32", "float16", "turbo8", "turbo4"] = "float16"
    """How the text embedder's vectors are stored (the text space's chunk vectors and the document space's
    ``doc_text``): ``float16`` halves their bytes (the largest part of the vector store) with retrieval
    measured unchanged (docs/benchmarks.md, bench/storage.py). ``turbo8`` / ``turbo4`` store Qdrant's
    TurboQuant codes (a half / a quarter of float16's bytes, on disk and in memory; Qdrant 1.18 or later on a
    server): no shared suite moved with turbo8, but it kept 0.983 of float16's exhaustive top 10 on a grown
    50,000-page corpus of near-duplicates (docs/retrieval.md, "Memory and disk per page"). A collection keeps the
    datatypes it was created with: corpora created before this option hold ``float32`` chunks, and before
    ``doc_text`` followed it a ``float32`` ``doc_text``."""
    pool_factor: int = Field(1, ge=1, le=16)
    """Hierarchical token pooling factor for stored ColPali multi-vectors (1 = no pooling)."""
    prefetch_quantization: Literal["none", "binary", "scalar"] = "none"
    """Quantisation of the indexed prefetch vectors (pooled multi-vectors, CLIP)."""
    chunk_context: list[Literal["document", "section"]] = Field(default_factory=list)
    """Header lines each text chunk is embedded with (dense ``text`` space; snippets and highlights keep the
    chunk's own words): ``document``, its document's short label (title · entity · period), and/or
    ``section``, its page's section path. Measured on sec-10q (bench/chunk_context.py, docs/benchmarks.md)."""
    bm25_avg_len: float | None = Field(None, gt=0)
    """Average page length (in BM25 tokens: words less stopwords, stemmed) for BM25 length normalisation.
    None: the corpus's own average, kept by the writer; stored vectors are re-weighted when it moves more
    than 20 % from the one they were indexed with and a quarter of the corpus's pages changed since
    (mmrag.jobs.bm25_stats). A number: fixed (corpora created before this option recorded 300)."""
