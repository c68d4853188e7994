"""The embedder seam: one abstract method, capabilities as attributes, a registry by spec.

An *embedder* turns a batch of items (``str`` texts or ``PIL.Image`` images) into
float32 vectors: shape ``(dim,)`` for dense models, ``(n_tokens, dim)`` for
multi-vector (late-interaction) models. ``kind`` says whether the items are
queries or documents (ColPali and some text models treat them differently).

Spec strings select a backend by prefix: ``st:``, ``open_clip:``, ``hf:``,
``colpali:``, ... Backends register a factory with :func:`register_embedder`;
built-ins register the same way an extension would.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

from mmrag.errors import InvalidInput, NotFound
from mmrag.types import Modality

Item = str | Image.Image
Kind = Literal["query", "document"]


class Embedder(abc.ABC):
    """Lifecycle: built by a factory from a spec (loads weights once), then
    ``embed_batch`` is called from one thread at a time (callers serialise or batch)."""

    spec: str  # the spec string it was built from
    modalities: frozenset[Modality]  # what items it accepts
    multivector: bool  # True: (n_tokens, dim) per item
    dim: int  # vector width
    max_batch: int = 32  # largest batch one forward pass should take

    @abc.abstractmethod
    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Embed items in one forward pass (or as few as ``max_batch`` needs)."""

    def embed(self, item: Item, kind: Kind = "document") -> np.ndarray:
        return self.embed_batch([item], kind)[0]

    def embed_many(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Embed any number of items in batches of ``max_batch``."""
        out: list[np.ndarray] = []
        for start in range(0, len(items), self.max_batch):
            out.extend(self.embed_batch(items[start : start + self.max_batch], kind))
        return out

    def check_items(self, items: Sequence[Item]) -> None:
        """Raise InvalidInput for items of a modality this embedder does not take."""
        for i, item in enumerate(items):
            modality = Modality.TEXT if isinstance(item, str) else Modality.IMAGE
            if not isinstance(item, str | Image.Image):
                raise InvalidInput(f"item {i} is a {type(item).__name__}; allowed: str or PIL image")
            if modality not in self.modalities:
                allowed = ", ".join(sorted(m.value for m in self.modalities))
                raise InvalidInput(f"{self.spec} does not embed {modality.value} (it takes: {allowed})")


@dataclass(frozen=True, slots=True)
class EmbedderOptions:
    """How to build an embedder."""

    device: str = "cpu"  # resolved torch device
    dtype: str = "auto"  # auto: fp32 on CPU, bf16/fp16 on GPU


Factory = Callable[[str, EmbedderOptions], Embedder]
_REGISTRY: dict[str, Factory] = {}


def register_embedder(prefix: str, factory: Factory) -> None:
    """Register a backend for specs ``prefix:name``."""
    _REGISTRY[prefix] = factory


def registered_prefixes() -> list[str]:
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, str]:
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise InvalidInput(f"embedder spec {spec!r} must look like 'backend:name' (backends: "
                           f"{', '.join(registered_prefixes())})")
    return prefix, name


def load_embedder(spec: str, options: EmbedderOptions | None = None) -> Embedder:
    """Build the embedder a spec names. Unknown backends raise NotFound."""
    from mmrag.embed import backends  # noqa: F401  (registers the built-ins)

    prefix, name = parse_spec(spec)
    factory = _REGISTRY.get(prefix)
    if factory is None:
        known = ", ".join(registered_prefixes())
        raise NotFound(f"unknown embedder backend {prefix!r} in {spec!r}; known: {known}")
    return factory(name, options or EmbedderOptions())
