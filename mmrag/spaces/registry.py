"""The space registry: a space name -> the ``module:Class`` of its :class:`~mmrag.spaces.base.Space`,
imported on first use, as embedders are registered by spec prefix (``embed/base.py``) and VLM backends by
name (``generate/factory.py``).

The built-in spaces are registered the same way an extension would be (:func:`register_space`). A space
class says which embedder it needs (``Space.embedder_name``); :func:`build_spaces` builds every registered
space whose embedder is loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mmrag.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from mmrag.embed.base import Embedder
    from mmrag.spaces.base import Space

SPACE_TYPES: dict[str, str] = {
    "text": "mmrag.spaces.text:TextDenseSpace",
    "bm25": "mmrag.spaces.bm25:Bm25Space",
    "document": "mmrag.spaces.document:DocumentSpace",
    "clip": "mmrag.spaces.visual:ClipSpace",  # scipy, for ColPali token pooling: imported when first built
    "colpali": "mmrag.spaces.visual:ColpaliSpace",
}
"""Built-in spaces: name -> ``module:Class``."""

_registry: dict[str, str | type[Space]] = dict(SPACE_TYPES)


def register_space(name: str, space: str | type[Space]) -> None:
    """Serve space ``name`` with a Space class or its ``module:Class`` path (imported when first used).
    Replaces an earlier entry of the name."""
    if not name:
        raise InvalidInput("a space name must be non-empty")
    _registry[name] = space


def space_names() -> tuple[str, ...]:
    """Every registered space, in registration order (the built-ins first)."""
    return tuple(_registry)


def space_type(name: str) -> type[Space]:
    """The class of a registered space, importing its module the first time; NotFound names the known ones."""
    entry = _registry.get(name)
    if entry is None:
        raise NotFound(f"unknown space {name!r}; known: {', '.join(_registry)}")
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
        assert isinstance(entry, type)
        _registry[name] = entry
    return entry


def build_spaces(embedders: Mapping[str, Embedder]) -> dict[str, Space]:
    """Every registered space whose embedder is loaded; building them loads no model (lazy embedders load
    on first use)."""
    spaces: dict[str, Space] = {}
    for name in _registry:
        space = space_type(name).build(embedders)
        if space is not None:
            spaces[name] = space
    return spaces
