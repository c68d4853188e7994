"""The VLM backend registry and what the composition root builds from ``VLMConfig.backend``: the backend
and the engine in front of it.

Backends are registered by name as ``module:attribute`` of a factory ``(VLMConfig) -> VLMBackend``,
imported when first built, as embedders are by spec prefix (``embed/base.py``) and spaces by name
(``spaces/registry.py``); ``none`` builds no backend.
"""

from __future__ import annotations

from collections.abc import Callable

from mmrag.errors import InvalidInput, NotFound
from mmrag.generate.base import VLMBackend
from mmrag.generate.engine import VLMEngine
from mmrag.registry import Registry
from mmrag.vlm_config import VLMConfig

BackendFactory = Callable[[VLMConfig], VLMBackend]

VLM_BACKENDS: dict[str, str] = {
    "transformers": "mmrag.generate.transformers_backend:TransformersBackend.load",
    "vllm": "mmrag.generate.vllm_backend:VLLMBackend",
}
"""Built-in backends: name -> ``module:attribute`` (a dotted attribute path) of a factory."""

VLM_REGISTRY: Registry[BackendFactory] = Registry("VLM backend", VLM_BACKENDS, "mmrag.vlm_backends")
"""The registry of VLM backends (third-party packages: entry points of the group ``mmrag.vlm_backends``)."""


def register_vlm_backend(name: str, factory: str | BackendFactory) -> None:
    """Serve ``VLMConfig.backend == name`` with ``factory`` (a callable or its ``module:attribute`` path)."""
    if not name or name == "none":
        raise InvalidInput(f"a VLM backend name must be non-empty and not 'none', got {name!r}")
    VLM_REGISTRY.register(name, factory)


def check_vlm_backend(config: VLMConfig) -> None:
    """Refuse (start-up) a ``vlm.backend`` setting that names no registered backend, listing those that are."""
    if config.backend != "none":
        VLM_REGISTRY.check(config.backend, f"MMRAG_VLM__BACKEND={config.backend!r} (or 'none')")


def _factory(name: str) -> BackendFactory:
    if name not in VLM_REGISTRY.names():
        raise NotFound(f"unknown VLM backend {name!r}; known: {', '.join(sorted(VLM_REGISTRY.names()))}, none")
    return VLM_REGISTRY.get(name)


def build_backend(config: VLMConfig) -> VLMBackend | None:
    """The backend ``config.backend`` names (None for ``none``); loads weights or opens a client."""
    return None if config.backend == "none" else _factory(config.backend)(config)


def build_engine(config: VLMConfig) -> VLMEngine | None:
    """Backend + admission + encoder cache from the config; None when no VLM is configured."""
    backend = build_backend(config)
    return VLMEngine(backend, config) if backend is not None else None
