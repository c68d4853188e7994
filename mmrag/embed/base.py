"""The embedder seam: one abstract method, capabilities as attributes, a registry by spec.

An *embedder* turns a batch of items (``str`` texts or ``PIL.Image`` images) into
float32 vectors: shape ``(dim,)`` for dense models, ``(n_tokens, dim)`` for
multi-vector (late-interaction) models. ``kind`` says whether the items are
queries or documents (ColPali and some text models treat them differently).

Spec strings select a backend by prefix: ``st:``, ``open_clip:``, ``hf:``,
``colpali:``, ... :data:`BACKENDS` maps each built-in prefix to the dotted path of its
factory, imported on first use (so importing this module loads no backend and nothing
registers itself at import). Extensions and tests add prefixes with
:func:`register_embedder` (a factory or a dotted path), through the
``embed.backends`` setting, which the composition root passes to :func:`register_backends`, or
as a package's entry points of the group ``mmrag.embedders`` (:mod:`mmrag.registry`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from PIL import Image

from mmrag.config import TextPrecision
from mmrag.errors import InvalidInput, NotFound
from mmrag.registry import Registry
from mmrag.types import Modality

Item = str | Image.Image
Kind = Literal["query", "document"]
TEXT_PRECISIONS: tuple[str, ...] = get_args(TextPrecision)
"""What the text model computes in (``st:`` models; the ``embed.text_precision`` setting)."""


class Embedder(abc.ABC):
    """Lifecycle: built by a factory from a spec (loads weights once), then
    ``embed_batch`` is called from one thread at a time (callers serialise or batch)."""

    spec: str  # the spec string it was built from
    modalities: frozenset[Modality]  # what items it accepts
    multivector: bool  # True: (n_tokens, dim) per item
    dim: int  # vector width
    max_batch: int = 32  # largest batch one forward pass should take
    precision: str | None = None  # what vectors are computed in where the backend has a choice (st:); None: its one
    kernels: str | None = None  # with which kernels, where the backend has a choice (st:): ``int8/u8s8``, ...

    @abc.abstractmethod
    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Embed items in one forward pass (or as few as ``max_batch`` needs)."""

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """Per item, what the forward pass needs (token ids, pixel tensors), made on the caller's
        thread so that the embedding service can prepare the next items while a batch computes.

        Items must be checked first (:meth:`check_items`); an item the preprocessing refuses
        raises (ValueError/TypeError) here, before it joins a batch. Default: the items themselves
        (a backend that prepares nothing; :meth:`compute` is then ``embed_batch``)."""
        return list(items)

    def size(self, prepared: Any) -> int:
        """How long one prepared item is along the axis batches pad (tokens); the service batches
        items of similar size together. Default 1 (everything alike)."""
        return 1

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        """The forward pass over prepared items (any mix of :meth:`prepare` results), in order.
        ``embed_batch(items) == compute(prepare(items))`` for every backend."""
        return self.embed_batch(prepared, kind)

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

    device: str = "cpu"  # auto (cuda if available), cpu, cuda:1, ...: resolved by mmrag.devices
    dtype: str = "auto"  # auto: fp32 on CPU, bf16 on GPU (fp16 where bf16 is unsupported)
    text_precision: str = "float32"  # st: text models: auto (by the CPU), float32, int8 (ONNX Runtime, CPU), bf16
    int8_kernels: str = "auto"  # int8 kernels: auto (by the CPU: mmrag.cpu_kernels), u8s8, u8u8 (forced)
    cache_dir: str | None = None  # where derived model files go (the int8 export); None: $XDG_CACHE_HOME/mmrag
    max_batch_tokens: int = 0  # text models: most padded tokens in one forward; 0: 2048 on a CPU, unbounded on a GPU


Factory = Callable[[str, EmbedderOptions], Embedder]
"""Builds an embedder from the name after the prefix (``spec = prefix:name``)."""

BACKENDS: dict[str, str] = {
    "st": "mmrag.embed.sentence:SentenceEmbedder",
    "open_clip": "mmrag.embed.open_clip_backend:OpenClipEmbedder",
    "hf": "mmrag.embed.hf_colpali_backend:HFColPaliEmbedder",
    "colpali": "mmrag.embed.colpali_backend:ColPaliEngineEmbedder",
}
"""Built-in backends: spec prefix -> ``module:attribute`` of a :data:`Factory`."""

EMBEDDERS: Registry[Factory] = Registry("embedder backend", BACKENDS, "mmrag.embedders")
"""The registry of spec prefixes (third-party packages: entry points of the group ``mmrag.embedders``)."""


def register_embedder(prefix: str, factory: str | Factory) -> None:
    """Serve specs ``prefix:name`` with ``factory``: a callable or a ``module:attribute`` path,
    imported when the first such spec is loaded. Replaces an earlier entry of the prefix."""
    if not prefix or ":" in prefix:
        raise InvalidInput(f"embedder prefix {prefix!r} must be non-empty and contain no ':'")
    EMBEDDERS.register(prefix, factory)


def register_backends(backends: Mapping[str, str]) -> None:
    """Register several ``prefix -> module:attribute`` entries (the ``embed.backends`` setting)."""
    for prefix, path in backends.items():
        register_embedder(prefix, path)


def registered_prefixes() -> list[str]:
    return sorted(EMBEDDERS.names())


def parse_spec(spec: str) -> tuple[str, str]:
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise InvalidInput(f"embedder spec {spec!r} must look like 'backend:name' (backends: "
                           f"{', '.join(registered_prefixes())})")
    return prefix, name


def check_spec(spec: str, setting: str) -> None:
    """Refuse (start-up) a ``setting`` whose spec names no registered backend, listing those that are."""
    EMBEDDERS.check(parse_spec(spec)[0], f"{setting}={spec!r}")


def factory_for(prefix: str, spec: str = "") -> Factory:
    """The factory of a prefix, importing its module the first time. Unknown prefixes raise NotFound."""
    if prefix not in EMBEDDERS.names():
        known = ", ".join(registered_prefixes())
        raise NotFound(f"unknown embedder backend {prefix!r} in {spec or prefix!r}; known: {known}")
    return EMBEDDERS.get(prefix)


def load_embedder(spec: str, options: EmbedderOptions | None = None) -> Embedder:
    """Build the embedder a spec names (loads its weights). Unknown backends raise NotFound."""
    prefix, name = parse_spec(spec)
    return factory_for(prefix, spec)(name, options or EmbedderOptions())
