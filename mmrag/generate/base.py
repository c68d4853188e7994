"""The VLM backend seam: ``encode`` images, ``generate`` tokens; typed messages between them.

A backend is one model behind one of two abstract methods each; everything else (admission,
the encoder cache, evidence selection) lives in the engine and works for any backend.

* ``encode(image)`` turns one planned image into an :class:`EncodedImage`: for the in-process
  backend, preprocessing + the vision tower, features of shape ``(tokens, text_hidden)``; for an
  external server (vLLM), no compute: a stable id + data URL the server caches on.
* ``generate(request, images, timings)`` streams text deltas. Backends batch concurrent calls
  themselves (the in-process backend decodes all running sequences in one forward per step).
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from mmrag.generate.encoder_cache import EncoderCacheKey
from mmrag.generate.visual_tokens import VisualTokenizer, VisualTokenPlan
from mmrag.imaging import image_size

MAX_IMAGE_PIXELS = 100_000_000
"""Decompression-bomb guard for evidence images (page renders are capped far lower by ingest)."""


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An encoded image and its planned cost."""

    data: bytes  # PNG/JPEG bytes as stored
    content_hash: str  # sha256 hex of data
    plan: VisualTokenPlan  # resize target and token count under the request's budget
    label: str = ""  # e.g. "report.pdf p.3" (for prompts and logs)


@dataclass(slots=True)
class EncodedImage:
    """Vision-encoder output for one image (or a reference the server resolves)."""

    key: EncoderCacheKey
    tokens: int  # placeholder tokens this image occupies in the prompt
    features: Any = None  # torch.Tensor (tokens, text_hidden) in-process; None for servers
    grid_thw: tuple[int, int, int] | None = None  # Qwen (t, h, w) patch grid, for M-RoPE
    nbytes: int = 0  # size of features (encoder cache accounting)
    preprocess_s: float = 0.0  # decode + resize + normalise
    encode_s: float = 0.0  # vision tower
    reference: dict[str, Any] = field(default_factory=dict)  # server form, e.g. OpenAI content part


@dataclass(slots=True)
class GenerationRequest:
    """What to generate: a chat turn with images placed before the text."""

    request_id: str
    prompt: str  # the user text (question and any text context)
    images: list[ImageInput] = field(default_factory=list)
    system: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.0


@dataclass(slots=True)
class RequestTimings:
    """Per-stage seconds of one request (filled by the engine and the backend)."""

    queue_s: float = 0.0  # waiting for admission
    preprocess_s: float = 0.0  # image decode + resize + normalise (misses only)
    encoder_queue_s: float = 0.0  # waiting for an encoder worker
    encoder_s: float = 0.0  # vision tower compute (misses only)
    prefill_s: float = 0.0  # prompt forward incl. visual tokens
    ttft_s: float = 0.0  # submit -> first token
    decode_tokens_per_s: float = 0.0  # generated tokens after the first / their time
    total_s: float = 0.0
    prompt_tokens: int = 0  # incl. visual
    visual_tokens: int = 0
    new_tokens: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in self.__dataclass_fields__}


def image_input(data: bytes, accounting: VisualTokenizer, max_tokens: int | None, label: str = "") -> ImageInput:
    """Hash and measure an encoded image and plan it under ``max_tokens`` (header read only)."""
    width, height = image_size(data, max_pixels=MAX_IMAGE_PIXELS, what=f"image {label}".strip())
    plan = accounting.plan(width, height, max_tokens)
    return ImageInput(data, hashlib.sha256(data).hexdigest(), plan, label)


class VLMBackend(abc.ABC):
    """Lifecycle: built once from a :class:`~mmrag.vlm_config.VLMConfig` (loads weights or
    checks the server), then ``encode``/``generate`` are called from many threads; ``close``."""

    model_id: str  # hub id or path
    revision: str  # "" when unknown
    dtype: str  # e.g. "float32"
    accounting: VisualTokenizer  # visual-token counting of this model family
    local_encoder: bool  # True: encode() computes features worth caching here
    overlaps_encoder: bool  # True: encode() may run while generate() steps other requests

    @abc.abstractmethod
    def encode(self, image: ImageInput) -> EncodedImage:
        """Preprocess + encode one image (or build its server reference)."""

    @abc.abstractmethod
    def generate(
        self, request: GenerationRequest, images: Sequence[EncodedImage], timings: RequestTimings
    ) -> Iterator[str]:
        """Stream text deltas; fills ``timings.prefill_s`` and token counts."""

    @abc.abstractmethod
    def count_text_tokens(self, request: GenerationRequest) -> int:
        """Prompt tokens without the visual ones (chat template included)."""

    def cache_key(self, image: ImageInput) -> EncoderCacheKey:
        p = image.plan
        pre = f"{self.accounting.family}:{p.resized_width}x{p.resized_height}:t{p.tokens}:n{p.tiles}"
        return EncoderCacheKey(image.content_hash, pre, self.model_id, self.revision, self.dtype)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release threads, connections and weights."""
