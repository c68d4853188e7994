"""Configuration of the VLM engine (attached to ``Settings`` as ``settings.vlm``).

It lives outside :mod:`mmrag.generate` so that importing :mod:`mmrag.config` loads no engine
code (and no torch); the engine's modules import it from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

MiB = 1024 * 1024


class VLMConfig(BaseModel):
    """Which vision-language model answers, where it runs, and what it may cost."""

    backend: str = Field("transformers", min_length=1)  # a registered one (mmrag.generate.factory), checked at start-up
    """``transformers``: in-process (embedded default); ``vllm``: an external OpenAI-compatible
    vLLM server at ``vllm_url``; ``none``: no VLM, answers are extractive text."""
    model: str = "Qwen/Qwen2.5-VL-3B-Instruct"
    """Hub id or local folder of the model (a local folder loads through the same code)."""
    revision: str | None = None
    """Hub revision (branch, tag or commit); part of the encoder-cache key."""
    family: Literal["auto", "qwen2_vl", "qwen2_5_vl", "paligemma", "idefics3"] = "auto"
    """Visual-token accounting family; ``auto`` reads the model config's ``model_type``."""
    vllm_url: str = "http://127.0.0.1:8001/v1"
    """Base URL (with ``/v1``) of the vLLM server when ``backend`` is ``vllm``."""
    vllm_api_key: str | None = None
    """Bearer token for the vLLM server, if it was started with ``--api-key``."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype: auto is float32 on CPU, bfloat16 on GPU. Part of the encoder-cache key."""
    device: str = "auto"
    """torch device of the in-process backend: auto (cuda if available), cpu, cuda, cuda:1, ..."""
    token_budget: int = Field(32_768, ge=256)
    """Tokens in flight across admitted requests: prefill (text + visual) plus ``max_new_tokens``
    of KV each. Admission never exceeds it; size it to the KV cache the device holds."""
    max_queue_requests: int = Field(64, ge=0)
    """Requests that may wait for admission; beyond it requests fail with Overloaded."""
    max_queue_tokens: int = Field(262_144, ge=0)
    """Token cost that may wait for admission; beyond it requests fail with Overloaded."""
    queue_timeout_s: float = Field(30.0, gt=0)
    """Longest wait for admission before a request fails with Overloaded (never hang)."""
    request_timeout_s: float = Field(300.0, gt=0)
    """Longest a request may run after admission (prefill + decode) before it is cancelled."""
    admission_policy: Literal["fair", "fcfs"] = "fair"
    """``fair``: token-aware fair queueing over cost lanes (default); ``fcfs``: arrival order (the
    baseline the admission benchmark compares against)."""
    starvation_s: float = Field(2.0, ge=0)
    """How long the head of the fair queue may be overtaken by cheaper requests that fit
    (backfill) before it gets the budget to itself; bounds the wait of image-heavy requests."""
    max_batch: int = Field(8, ge=1, le=256)
    """Most sequences decoded together in one step of the in-process backend."""
    encoder_cache_bytes: int = Field(512 * MiB, ge=0)
    """Size of the LRU cache of vision-encoder outputs (0 disables it)."""
    visual_token_budget: int = Field(1280, ge=4)
    """Default visual tokens per request (all evidence images together), when the caller gives none."""
    max_visual_tokens_per_image: int = Field(1280, ge=4)
    """Upper bound of visual tokens of one image (Qwen: ``max_pixels = this * 28 * 28``)."""
    min_pixels: int = Field(56 * 56, ge=28 * 28)
    """Smallest image area after resizing (Qwen2-VL family ``min_pixels``)."""
    max_pixels: int = Field(1280 * 28 * 28, ge=56 * 56)
    """Largest image area after resizing (Qwen2-VL family ``max_pixels``)."""
    max_new_tokens: int = Field(512, ge=1, le=8192)
    """Default and cap of generated tokens per answer."""
    temperature: float = Field(0.0, ge=0, le=2)
    """Sampling temperature; 0 is greedy."""
    encoder_threads: int = Field(1, ge=1, le=8)
    """Threads that run preprocessing + the vision encoder beside the decode loop (overlap)."""

    @model_validator(mode="after")
    def _check(self) -> VLMConfig:
        if self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels ({self.min_pixels}) exceeds max_pixels ({self.max_pixels})")
        return self
