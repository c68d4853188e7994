"""In-process backend on transformers (Qwen2-VL / Qwen2.5-VL class): the embedded default.

Lifecycle: ``TransformersBackend.load(config)`` loads processor + weights once from a hub id or a
local folder (same code path); ``encode`` runs preprocessing + the vision tower on the caller's
thread (the engine's encoder threads); ``generate`` hands the prompt embeddings to the
:class:`~mmrag.generate.decode_loop.DecodeLoop` thread, which batches all running requests at
each decode step, and streams text deltas back; ``close`` stops the loop.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from mmrag.devices import resolve_device_dtype
from mmrag.errors import InvalidInput, NotFound, Unavailable
from mmrag.generate.base import (
    MAX_IMAGE_PIXELS,
    EncodedImage,
    GenerationRequest,
    ImageInput,
    RequestTimings,
    VLMBackend,
)
from mmrag.generate.decode_loop import ComputeLedger, DecodeLoop
from mmrag.generate.decode_loop import Sequence as LoopSequence
from mmrag.generate.qwen_inputs import expand_image_placeholders, mrope_position_ids, scatter_image_features
from mmrag.generate.visual_tokens import QwenVisualTokenizer
from mmrag.imaging import decode_image
from mmrag.vlm_config import VLMConfig


class TransformersBackend(VLMBackend):
    """Qwen2-VL-family model in this process (see the module docstring)."""

    local_encoder = True
    overlaps_encoder = True

    def __init__(self, model: Any, processor: Any, config: VLMConfig, model_id: str, revision: str = "") -> None:
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.model_id, self.revision = model_id, revision
        self.device = next(model.parameters()).device
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        family = model.config.model_type
        if family not in ("qwen2_vl", "qwen2_5_vl"):
            raise InvalidInput(f"the transformers backend runs qwen2_vl / qwen2_5_vl models, not {family!r}")
        self.accounting: QwenVisualTokenizer = QwenVisualTokenizer(config.min_pixels, config.max_pixels, family=family)
        self.image_token = self.processor.image_token
        self.image_token_id = int(model.config.image_token_id)
        eos = {self.tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
        eos |= {int(e) for e in _as_list(model.config.text_config.eos_token_id)}
        self._loop = DecodeLoop(model, {e for e in eos if isinstance(e, int) and e >= 0}, config.max_batch)
        self._timeout = config.request_timeout_s

    @classmethod
    def load(cls, config: VLMConfig) -> TransformersBackend:
        """Load processor and weights from ``config.model`` (hub id or local folder)."""
        from transformers import AutoModelForImageTextToText, AutoProcessor

        device, dtype = resolve_device_dtype(config.device, config.dtype)
        auto_model: Any = AutoModelForImageTextToText
        try:
            processor = AutoProcessor.from_pretrained(config.model, revision=config.revision)
            model = auto_model.from_pretrained(config.model, revision=config.revision, dtype=dtype)
        except OSError as exc:
            raise NotFound(f"VLM {config.model!r} cannot be loaded: {exc}") from exc
        return cls(model.to(device), processor, config, config.model, config.revision or "")

    # --- encode ------------------------------------------------------------------------
    @torch.inference_mode()
    def encode(self, image: ImageInput) -> EncodedImage:
        """Decode, resize to the plan (the processor's own resize), run the vision tower."""
        t0 = time.perf_counter()
        rgb = decode_image(image.data, max_pixels=MAX_IMAGE_PIXELS, what=image.label or "image")
        size = {"shortest_edge": self.accounting.min_pixels, "longest_edge": image.plan.max_pixels}
        batch = self.processor.image_processor(images=[rgb], size=size, return_tensors="pt")  # type: ignore[attr-defined]
        pixels = batch["pixel_values"].to(self.device, self.model.dtype)  # (patches, C*T*14*14)
        grid = batch["image_grid_thw"].to(self.device)  # (1, 3)
        t1 = time.perf_counter()
        feats = self.model.model.get_image_features(pixels, grid).pooler_output[0]  # (tokens, text_hidden)
        t2 = time.perf_counter()
        if feats.shape[0] != image.plan.tokens:
            raise RuntimeError(f"planned {image.plan.tokens} visual tokens, encoder gave {feats.shape[0]}")
        thw = tuple(int(x) for x in grid[0].tolist())
        return EncodedImage(
            self.cache_key(image),
            feats.shape[0],
            feats,
            (thw[0], thw[1], thw[2]),
            feats.numel() * feats.element_size(),
            t1 - t0,
            t2 - t1,
        )

    # --- prompt ------------------------------------------------------------------------
    def chat_prompt(self, request: GenerationRequest, counts: Sequence[int]) -> str:
        """Chat-templated prompt with each image's placeholder expanded to its token count."""
        content: list[dict[str, str]] = [{"type": "image"} for _ in counts]
        content.append({"type": "text", "text": request.prompt})
        messages: list[dict[str, object]] = []
        if request.system:
            messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
        messages.append({"role": "user", "content": content})
        prompt = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)  # type: ignore[attr-defined]
        return expand_image_placeholders(prompt, self.image_token, counts)

    def count_text_tokens(self, request: GenerationRequest) -> int:
        return len(self.tokenizer(self.chat_prompt(request, [0] * len(request.images)))["input_ids"])

    @torch.inference_mode()
    def prompt_inputs(
        self, request: GenerationRequest, images: Sequence[EncodedImage]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """``(input_ids (1, L), inputs_embeds (1, L, H), position_ids (3, 1, L), next_pos)``."""
        prompt = self.chat_prompt(request, [im.tokens for im in images])
        ids = self.tokenizer(prompt, return_tensors="pt")["input_ids"].to(self.device)  # (1, L)
        embeds = self.model.get_input_embeddings()(ids)  # (1, L, H)
        if images:
            feats = torch.cat([im.features.to(self.device) for im in images])  # (sum tokens, H)
            embeds = scatter_image_features(embeds, ids, self.image_token_id, feats)
        grids = [im.grid_thw for im in images if im.grid_thw is not None]
        pos, next_pos = mrope_position_ids(self.model, ids, self.image_token_id, grids)
        return ids, embeds, pos, next_pos

    # --- generate ----------------------------------------------------------------------
    def generate(
        self, request: GenerationRequest, images: Sequence[EncodedImage], timings: RequestTimings
    ) -> Iterator[str]:
        ids, embeds, pos, next_pos = self.prompt_inputs(request, images)
        timings.prompt_tokens = ids.shape[1]
        seq = LoopSequence(embeds, pos, next_pos, request.max_new_tokens, request.temperature,
                           request_id=request.request_id)
        self._loop.submit(seq)
        generated: list[int] = []
        emitted = ""
        deadline = time.monotonic() + self._timeout
        try:
            while True:
                try:
                    item = seq.out.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise Unavailable(
                        f"VLM request timed out after {self._timeout:.0f}s",
                        detail={"request_id": request.request_id},
                    ) from None
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise Unavailable(f"VLM generation failed: {item}") from item
                generated.append(item)
                timings.prefill_s = seq.prefill_s
                text = self.tokenizer.decode(generated, skip_special_tokens=True)
                if text.endswith("\ufffd"):  # partial UTF-8 sequence: wait for the next token
                    continue
                delta, emitted = text[len(emitted) :], text
                if delta:
                    yield delta
        finally:
            seq.cancelled = True
            timings.new_tokens = len(generated)
            timings.prefill_s = seq.prefill_s

    @property
    def ledger(self) -> ComputeLedger:
        """What the decode loop computed (prompt tokens prefilled, tokens decoded, resident KV)."""
        return self._loop.ledger

    def close(self) -> None:
        self._loop.close()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
