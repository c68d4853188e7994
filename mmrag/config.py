"""Configuration: pydantic models with bounds and a docstring per field.

One :class:`Settings` object (env prefix ``MMRAG_``, nested fields with ``__``,
e.g. ``MMRAG_INGEST__DPI=200``) is built by the shells at start-up with
:func:`load_settings`; nothing here is created at import time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mmrag.generate.config import VLMConfig

MiB = 1024 * 1024


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
    min_text_chars: int = Field(16, ge=0)
    """A text layer with fewer non-space characters than this is not usable: the page is OCRed."""
    chunk_words: int = Field(120, ge=8, le=2000)
    """Words per text chunk (the text spaces index chunks)."""
    chunk_overlap: int = Field(30, ge=0)
    """Words shared by consecutive chunks."""


class EmbedConfig(BaseModel):
    """Which models embed what, and where they run."""

    text_model: str = "st:sentence-transformers/all-MiniLM-L6-v2"
    """Dense text embedder spec (always on)."""
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


class RetrieveConfig(BaseModel):
    """Defaults and bounds of search."""

    default_top_k: int = Field(10, ge=1, le=1000)
    """Results returned when the request does not say."""
    max_top_k: int = Field(100, ge=1, le=1000)
    """Largest top_k a request may ask for."""
    prefetch_limit: int = Field(100, ge=1, le=10_000)
    """Candidates each space contributes before fusion."""
    max_prefetch_limit: int = Field(1000, ge=1, le=10_000)
    """Largest per-request prefetch_limit."""
    rrf_k: int = Field(60, ge=1)
    """The k of reciprocal rank fusion."""
    fusion: Literal["dbsf", "rrf"] = "dbsf"
    """How the spaces' candidates are fused: ``dbsf`` (Qdrant's distribution-based score fusion:
    scores normalised by mean +- 3 sd per space, then summed) or ``rrf`` (reciprocal rank). Requests
    with weights use RRF (Qdrant's DBSF takes no weights). On the shipped docling suite DBSF lifted
    hybrid nDCG@5 from 0.908 (RRF k=60) to 0.943, level with BM25 alone (0.941) (docs/benchmarks.md)."""
    max_query_chars: int = Field(2000, ge=1)
    """Longest text query accepted."""


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


class JobsConfig(BaseModel):
    """Ingestion jobs: page batches, in-process worker threads, and the optional Celery broker."""

    broker_url: str | None = None
    """Celery broker (e.g. redis://redis:6379/0). None: the embedded runner (worker threads, no broker)."""
    spool_dir: Path | None = None
    """Uploaded bytes and stage outputs (a volume shared by API and workers). None: <data_dir>/spool."""
    batch_pages: int = Field(16, ge=1, le=10_000)
    """Pages per batch: large documents are split so work spreads and a retry redoes one batch."""
    cpu_workers: int = Field(1, ge=1, le=64)
    """Embedded runner: threads that decode, render and OCR."""
    embed_workers: int = Field(1, ge=1, le=16)
    """Embedded runner: threads that embed (each calls the embedder or the embedding service)."""
    max_retries: int = Field(4, ge=0, le=50)
    """Retries of a stage on a transient error (service unavailable, overloaded, I/O)."""
    retry_backoff_s: float = Field(1.0, gt=0)
    """First retry delay; doubles on each retry."""
    visibility_timeout_s: float = Field(3600.0, gt=0)
    """Celery/Redis: an unacknowledged task (its worker died) is redelivered after this long."""
    stall_s: float = Field(300.0, gt=0)
    """The owner re-sends the pending work of a job that made no progress for this long (lost messages)."""


class Settings(BaseSettings):
    """Everything configurable, from MMRAG_* environment variables (and an optional .env)."""

    model_config = SettingsConfigDict(env_prefix="MMRAG_", env_nested_delimiter="__", extra="ignore")

    data_dir: Path = Path("mmrag-data")
    """The one folder holding the catalog, page images, the embedded store and job state."""
    store: StoreConfig = Field(default_factory=StoreConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)
    retrieve: RetrieveConfig = Field(default_factory=RetrieveConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    vlm: VLMConfig = Field(default_factory=VLMConfig)
    eval_suites_dir: Path = Path("eval/suites")
    """Folder of evaluation suites that POST /evaluations may run (one sub-folder per suite)."""
    log_level: str = "INFO"
    """Python logging level."""


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment, then apply keyword overrides (CLI flags)."""
    settings = Settings()
    data = settings.model_dump()
    for key, value in overrides.items():
        if value is not None:
            data[key] = value
    settings = Settings.model_validate(data)
    settings.data_dir = Path(os.path.expanduser(str(settings.data_dir))).resolve()
    return settings


class CorpusConfig(BaseModel):
    """Per-corpus settings, fixed when the corpus is created (they shape its collection)."""

    spaces: list[str] = Field(default_factory=lambda: ["text", "bm25", "clip", "colpali"])
    """Retrieval spaces to index. Spaces whose model cannot be loaded are dropped at creation, with a note."""
    description: str = ""
    """Free text for people."""
    text_model: str | None = None
    """Text embedder spec used for this corpus (recorded at creation)."""
    clip_model: str | None = None
    """CLIP/SigLIP spec used for this corpus (recorded at creation)."""
    colpali_model: str | None = None
    """ColPali-family spec used for this corpus (recorded at creation)."""
    pool_factor: int = Field(1, ge=1, le=16)
    """Hierarchical token pooling factor for stored ColPali multi-vectors (1 = no pooling)."""
    prefetch_quantization: Literal["none", "binary", "scalar"] = "none"
    """Quantisation of the indexed prefetch vectors (pooled multi-vectors, CLIP)."""
    bm25_avg_len: float = Field(300.0, gt=0)
    """Expected words per page for BM25 length normalisation."""
