"""Configuration of the embedding service (``mmrag embed-serve``; attached to ``Settings`` as
``settings.embed_service``, so ``MMRAG_EMBED_SERVICE__BATCHING__MAX_BATCH`` and the like set it, and the
command's flags override it). Kept apart from the service so that importing :mod:`mmrag.config` loads
no model code.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class BatchingConfig(BaseModel):
    """How the embedding service batches requests for one model."""

    max_batch: int = Field(default=32, ge=1, le=4096)
    """Most items in one forward pass (also capped by the embedder's own ``max_batch``)."""
    max_wait_ms: float = Field(default=0.0, ge=0, le=10_000)
    """Longest an item waits for its batch to fill while the model is idle; 0: a batch goes as soon
    as the forward thread is free (it holds everything that queued while the previous one computed)."""
    queue_size: int = Field(default=256, ge=1)
    """Most items queued per model; beyond it requests are refused (429 + Retry-After)."""
    bucket_px: int = Field(default=64, ge=1)
    """Image sizes rounded up to multiples of this many pixels share a bucket (multi-vector models)."""
    torch_threads: int = Field(default=0, ge=0)
    """torch intra-op threads of the forward pass; 0: chosen per batch size by measurement among 1,
    cores - 1 and all cores (:class:`~mmrag.embed.threads.ThreadPicker`), since the best count
    depends on the batch and on what else holds the cores."""


class InputLimits(BaseModel):
    """What one request may carry."""

    max_items: int = Field(default=256, ge=1)
    """Most inputs in one request."""
    max_text_chars: int = Field(default=20_000, ge=1)
    """Longest text input."""
    max_image_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Largest encoded image."""
    max_image_pixels: int = Field(default=40_000_000, ge=1)
    """Largest decoded image (width x height): decompression-bomb guard."""


class EmbedServiceConfig(BaseModel):
    """The embedding service: how it batches each model's requests and what one request may carry."""

    batching: BatchingConfig = Field(default_factory=BatchingConfig)
    """Dynamic batching per model."""
    limits: InputLimits = Field(default_factory=InputLimits)
    """Bounds of one request."""
