"""vLLM as an external OpenAI-compatible server (its own venv or container).

vLLM cannot share our venv (CUDA-only wheels pinning torch/transformers/fastapi), so it runs as
``vllm serve Qwen/Qwen2.5-VL-7B-Instruct``; this backend speaks its Chat Completions API with
``stream: true``. Our admission stays in front of it (the server's own scheduler then never sees
more tokens than our budget).

Images are sent so vLLM's own caches hit: each is resized client-side to exactly the planned
size (multiples of 28 px within the pixel bounds, so the server's ``smart_resize`` keeps it and
the token count is the one we admitted), PNG-encoded as a data URL, and tagged with a stable
``uuid`` (a digest of content hash + preprocessing + model + dtype, vLLM's ``multi_modal_uuids``
for online serving), so a page sent again reuses the server's processor/encoder cache entries.

Lifecycle: ``VLLMBackend(config)`` opens one pooled ``httpx.Client``; ``encode`` builds the
content part (no model compute here); ``generate`` streams deltas; ``close`` closes the client.
"""

from __future__ import annotations

import base64
import io
import json
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from PIL import Image

from mmrag.errors import InvalidInput, Overloaded, Unavailable
from mmrag.generate.base import (
    MAX_IMAGE_PIXELS,
    EncodedImage,
    GenerationRequest,
    ImageInput,
    RequestTimings,
    VLMBackend,
)
from mmrag.generate.visual_tokens import VisualTokenizer, tokenizer_for
from mmrag.imaging import decode_image
from mmrag.vlm_config import VLMConfig


def family_of(model_id: str) -> str:
    """Accounting family guessed from a hub id (``VLMConfig.family`` overrides it)."""
    name = model_id.lower().replace("-", "").replace("_", "").replace(".", "")
    for needle, family in (
        ("qwen25vl", "qwen2_5_vl"),
        ("qwen2vl", "qwen2_vl"),
        ("paligemma", "paligemma"),
        ("smolvlm", "smolvlm"),
        ("idefics3", "idefics3"),
    ):
        if needle in name:
            return family
    raise InvalidInput(f"cannot tell the model family of {model_id!r}; set vlm.family")


def image_content_part(image: ImageInput, uuid: str) -> dict[str, Any]:
    """OpenAI ``image_url`` content part with vLLM's stable ``uuid``, resized to the plan."""
    rgb = decode_image(image.data, max_pixels=MAX_IMAGE_PIXELS, what=image.label or "image")
    size = (image.plan.resized_width, image.plan.resized_height)
    if rgb.size != size and image.plan.tiles == 1:
        rgb = rgb.resize(size, Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    return {"type": "image_url", "image_url": {"url": url}, "uuid": uuid}


def chat_body(model: str, request: GenerationRequest, images: Sequence[EncodedImage]) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body: images first, then the text, streamed with usage."""
    content: list[dict[str, Any]] = [im.reference for im in images]
    content.append({"type": "text", "text": request.prompt})
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": content})
    return {
        "model": model,
        "messages": messages,
        "max_tokens": request.max_new_tokens,
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
        "user": request.request_id,
    }


def parse_sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """JSON chunks of an OpenAI SSE stream, until ``data: [DONE]``."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


class VLLMBackend(VLMBackend):
    """See the module docstring."""

    local_encoder = False  # the server encodes and caches (keyed by our uuid)
    overlaps_encoder = True  # vLLM schedules encoder work with other requests' steps

    def __init__(
        self, config: VLMConfig, client: httpx.Client | None = None, accounting: VisualTokenizer | None = None
    ) -> None:
        self.model_id, self.revision = config.model, config.revision or ""
        self.dtype = config.dtype
        family = family_of(config.model) if config.family == "auto" else config.family
        self.accounting = accounting or tokenizer_for(
            family, min_pixels=config.min_pixels, max_pixels=config.max_pixels
        )
        headers = {"Authorization": f"Bearer {config.vllm_api_key}"} if config.vllm_api_key else {}
        self._url = config.vllm_url.rstrip("/") + "/chat/completions"
        self._client = client or httpx.Client(
            headers=headers, timeout=httpx.Timeout(config.request_timeout_s, connect=10.0)
        )

    def encode(self, image: ImageInput) -> EncodedImage:
        t0 = time.perf_counter()
        key = self.cache_key(image)
        part = image_content_part(image, key.digest())
        return EncodedImage(key, image.plan.tokens, reference=part, preprocess_s=time.perf_counter() - t0)

    def count_text_tokens(self, request: GenerationRequest) -> int:
        """Upper estimate without the server's tokenizer: 1 token per 3 UTF-8 bytes + template."""
        chars = len(request.prompt.encode()) + len(request.system.encode())
        return math.ceil(chars / 3) + 32

    def generate(
        self, request: GenerationRequest, images: Sequence[EncodedImage], timings: RequestTimings
    ) -> Iterator[str]:
        body = chat_body(self.model_id, request, images)
        t0 = time.perf_counter()
        first = True
        try:
            with self._client.stream("POST", self._url, json=body) as resp:
                self._check(resp)
                for chunk in parse_sse(resp.iter_lines()):
                    usage = chunk.get("usage")
                    if usage:
                        timings.prompt_tokens = int(usage.get("prompt_tokens", 0))
                        timings.new_tokens = int(usage.get("completion_tokens", 0))
                    for choice in chunk.get("choices", []):
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text:
                            if first:
                                timings.prefill_s = time.perf_counter() - t0  # server-side TTFT
                                first = False
                            yield text
        except httpx.TimeoutException as exc:
            raise Unavailable(f"vLLM server at {self._url} timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise Unavailable(f"vLLM server at {self._url} is not reachable: {exc}") from exc

    def _check(self, resp: httpx.Response) -> None:
        if resp.status_code < 400:
            return
        detail = resp.read().decode(errors="replace")[:500]
        if resp.status_code in (429, 503):
            retry = float(resp.headers.get("retry-after", "1") or 1)
            raise Overloaded(f"vLLM server is busy ({resp.status_code})", retry_after=retry)
        if resp.status_code == 400:
            raise InvalidInput(f"vLLM rejected the request: {detail}")
        raise Unavailable(f"vLLM server answered {resp.status_code}: {detail}")

    def close(self) -> None:
        self._client.close()
