"""The embedding service without HTTP: models, their batchers, load failures, input checks, metrics.

``api/embed_server.py`` puts routes in front of :class:`EmbedService`; everything that decides
what is embedded, and what is refused, is here (and tested without a server where it can be).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind, load_embedder
from mmrag.embed.batching import DynamicBatcher
from mmrag.embed.lazy import LOAD_ERRORS, one_line
from mmrag.embed.wire import check_text
from mmrag.embed_service_config import BatchingConfig, InputLimits
from mmrag.errors import InvalidInput, MMRAGError, NotFound, TooLarge, Unavailable
from mmrag.imaging import decode_image
from mmrag.types import Modality

log = logging.getLogger(__name__)


class EmbedService:
    """Lifecycle: ``await start()`` loads every spec (a failure is recorded with its reason, not
    raised) and starts one batcher per loaded model; ``embed_texts`` / ``embed_images`` serve
    requests; ``await stop()`` stops the batchers."""

    def __init__(self, specs: Sequence[str], options: EmbedderOptions, batching: BatchingConfig,
                 limits: InputLimits) -> None:
        self.specs, self.options, self.batching, self.limits = list(specs), options, batching, limits
        self.batchers: dict[str, DynamicBatcher] = {}
        self.failed: dict[str, str] = {}  # spec -> why it did not load

    async def start(self) -> None:
        for spec in self.specs:
            try:
                embedder = await asyncio.to_thread(load_embedder, spec, self.options)
            except LOAD_ERRORS as exc:
                reason = exc.message if isinstance(exc, MMRAGError) else f"{type(exc).__name__}: {exc}"
                log.warning("embedding model %s is not available: %s", spec, one_line(reason))
                self.failed[spec] = reason
                continue
            batcher = DynamicBatcher(embedder, self.batching)
            await batcher.start()
            self.batchers[spec] = batcher

    async def stop(self) -> None:
        for batcher in self.batchers.values():
            await batcher.stop()

    def batcher(self, spec: str) -> DynamicBatcher:
        """The batcher of a served model: Unavailable (with the reason) when it failed to load, else NotFound."""
        if spec in self.failed:
            raise Unavailable(f"model {spec!r} failed to load: {self.failed[spec]}")
        if spec not in self.batchers:
            raise NotFound(f"unknown model {spec!r}; served: {', '.join(self.batchers) or 'none'}")
        return self.batchers[spec]

    def accepting(self, spec: str, modality: Modality, n: int) -> DynamicBatcher:
        """The batcher for ``n`` inputs of a modality, after checking the model takes it and the count fits
        the request limit and the model's whole queue (else the request could never be admitted)."""
        batcher = self.batcher(spec)
        modalities = batcher.embedder.modalities
        if modality not in modalities:
            allowed = ", ".join(sorted(m.value for m in modalities))
            raise InvalidInput(f"model {spec!r} does not embed {modality.value} (it takes: {allowed})")
        most = min(self.limits.max_items, batcher.config.queue_size)
        if n == 0:
            raise InvalidInput(f"input is empty; allowed: 1..{most} items")
        if n > most:
            raise TooLarge(f"{n} inputs in one request; allowed at most {most}")
        return batcher

    async def embed_texts(self, spec: str, texts: Sequence[object], kind: Kind) -> list[np.ndarray]:
        """Vectors of texts (each a non-empty string within the length limit), in order."""
        batcher = self.accepting(spec, Modality.TEXT, len(texts))
        items: list[Item] = [check_text(t, i, max_chars=self.limits.max_text_chars) for i, t in enumerate(texts)]
        return await batcher.submit(items, kind)

    async def embed_images(self, spec: str, blobs: Sequence[bytes], kind: Kind) -> list[np.ndarray]:
        """Vectors of encoded images, in order. Each is checked, decoded and prepared (the model's
        own preprocessing) off the event loop, so that it overlaps the batch computing now."""
        batcher = self.accepting(spec, Modality.IMAGE, len(blobs))
        images: list[Item] = []
        prepared: list[Any] = []
        for i, blob in enumerate(blobs):
            try:
                image, ready = await asyncio.to_thread(self._decode_and_prepare, batcher, blob, kind)
            except MMRAGError as exc:
                exc.message = f"image {i}: {exc.message}"
                raise
            images.append(image)
            prepared.append(ready)
        return await batcher.submit(images, kind, prepared)

    def _decode_and_prepare(self, batcher: DynamicBatcher, blob: bytes, kind: Kind) -> tuple[Item, Any]:
        lim = self.limits
        image = decode_image(blob, max_bytes=lim.max_image_bytes, max_pixels=lim.max_image_pixels)
        return image, batcher.prepare([image], kind)[0]  # decoding in parallel, preparing one at a time

    def multivector(self, spec: str) -> bool:
        return self.batcher(spec).embedder.multivector

    def health(self) -> dict[str, Any]:
        """Loaded models (dim, multivector, modalities, max_batch), failed ones with reasons, overall status."""
        models = {spec: describe(b.embedder, b.max_batch) for spec, b in self.batchers.items()}
        status = "ok" if not self.failed else ("degraded" if models else "down")
        return {"status": status, "models": models, "failed": self.failed,
                "max_items_per_request": min(self.limits.max_items, self.batching.queue_size)}

    def snapshots(self) -> dict[str, dict[str, Any]]:
        """Per model: its batcher's metrics as plain data."""
        return {spec: b.snapshot() for spec, b in self.batchers.items()}


def describe(embedder: Embedder, max_batch: int) -> dict[str, Any]:
    return {"dim": embedder.dim, "multivector": embedder.multivector, "max_batch": max_batch,
            "modalities": sorted(m.value for m in embedder.modalities), "precision": embedder.precision,
            "kernels": embedder.kernels}


def prometheus_text(snapshots: dict[str, dict[str, Any]]) -> str:
    """Prometheus exposition of the batcher snapshots (one label set per model)."""
    lines = []
    for spec, snap in snapshots.items():
        label = f'model="{spec}"'
        for key in ("queue_depth", "items_per_s", "items_total", "batches_total", "rejected_total",
                    "failed_items_total", "forward_seconds_total"):
            lines.append(f"mmrag_embed_{key}{{{label}}} {snap[key]}")
        hist = snap["batch_size_histogram"]
        for le in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]:
            cumulative = sum(n for size, n in hist.items() if size <= le)
            lines.append(f'mmrag_embed_batch_size_bucket{{{label},le="{le}"}} {cumulative}')
        lines.append(f'mmrag_embed_batch_size_bucket{{{label},le="+Inf"}} {sum(hist.values())}')
        lines.append(f"mmrag_embed_batch_size_sum{{{label}}} {sum(s * n for s, n in hist.items())}")
        lines.append(f"mmrag_embed_batch_size_count{{{label}}} {sum(hist.values())}")
    return "\n".join(lines) + "\n"
