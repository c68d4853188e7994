"""The VLM backend registry and what the composition root builds from ``VLMConfig.backend``: the backend
and the engine in front of it.

Backends are registered by name as ``module:attribute`` of a factory ``(VLMConfig) -> VLMBackend``,
imported when first built, as embedders are by spec prefix (``embed/base.py``) and spaces by name
(``spaces/registry.py``); ``none`` builds no backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from mmrag.errors import InvalidInput, NotFound
from mmrag.generate.base import VLMBackend
from mmrag.generate.engine import VLMEngine
from mmrag.vlm_config import VLMConfig

BackendFactory = Callable[[VLMConfig], VLMBackend]

VLM_BACKENDS: dict[str, str] = {
    "transformers": "mmrag.generate.transformers_backend:TransformersBackend.load",
    "vllm": "mmrag.generate.vllm_backend:VLLMBackend",
}
"""Built-in backends: name -> ``module:attribute`` (a dotted attribute path) of a factory."""

_registry: dict[str, str | BackendFactory] = dict(VLM_BACKENDS)


def register_vlm_backend(name: str, factory: str | BackendFactory) -> None:
    """Serve ``VLMConfig.backend == name`` with ``factory`` (a callable or its ``module:attribute`` path)."""
    if not name or name == "none":
        raise InvalidInput(f"a VLM backend name must be non-empty and not 'none', got {name!r}")
    _registry[name] = factory


def _factory(name: str) -> BackendFactory:
    entry = _registry.get(name)
    if entry is None:
        raise NotFound(f"unknown VLM backend {name!r}; known: {', '.join(sorted(_registry))}, none")
    if isinstance(entry, str):
        module, _, path = entry.partition(":")
        target: object = importlib.import_module(module)
        for attr in path.split("."):
            target = getattr(target, attr)
        assert callable(target), entry
        entry = _registry[name] = target  # type: ignore[assignment]
    return entry


def build_backend(config: VLMConfig) -> VLMBackend | None:
    """The backend ``config.backend`` names (None for ``none``); loads weights or opens a client."""
    return None if config.backend == "none" else _factory(config.backend)(config)


def build_engine(config: VLMConfig) -> VLMEngine | None:
    """Backend + admission + encoder cache from the config; None when no VLM is configured."""
    backend = build_backend(config)
    return VLMEngine(backend, config) if backend is not None else None
