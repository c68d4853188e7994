"""Building what ``VLMConfig.backend`` names: the backend and the engine in front of it (for the composition root)."""

from __future__ import annotations

from mmrag.generate.base import VLMBackend
from mmrag.generate.engine import VLMEngine
from mmrag.vlm_config import VLMConfig


def build_backend(config: VLMConfig) -> VLMBackend | None:
    """The backend ``config.backend`` names (None for ``none``); loads weights or opens a client."""
    if config.backend == "none":
        return None
    if config.backend == "vllm":
        from mmrag.generate.vllm_backend import VLLMBackend

        return VLLMBackend(config)
    from mmrag.generate.transformers_backend import TransformersBackend

    return TransformersBackend.load(config)


def build_engine(config: VLMConfig) -> VLMEngine | None:
    """Backend + admission + encoder cache from the config; None when no VLM is configured."""
    backend = build_backend(config)
    return VLMEngine(backend, config) if backend is not None else None
