"""The space registry: a space name -> the ``module:Class`` of its :class:`~mmrag.spaces.base.Space`,
imported on first use, as embedders are registered by spec prefix (``embed/base.py``) and VLM backends by
name (``generate/factory.py``).

The built-in spaces are registered the same way an extension would be (:func:`register_space`). A space
class says which embedder it needs (``Space.embedder_name``); :func:`build_spaces` builds every registered
space whose embedder is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mmrag.errors import InvalidInput
from mmrag.registry import Registry

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

SPACES: Registry[type[Space]] = Registry("space", SPACE_TYPES, "mmrag.spaces",
                                         check=lambda entry: isinstance(entry, type))
"""The registry of spaces (third-party packages: entry points of the group ``mmrag.spaces``)."""


def register_space(name: str, space: str | type[Space]) -> None:
    """Serve space ``name`` with a Space class or its ``module:Class`` path (imported when first used).
    Replaces an earlier entry of the name."""
    if not name:
        raise InvalidInput("a space name must be non-empty")
    SPACES.register(name, space)


def space_names() -> tuple[str, ...]:
    """Every registered space, in registration order (the built-ins first, then the entry points)."""
    return tuple(SPACES.names())


def page_spaces() -> tuple[str, ...]:
    """The registered spaces that rank pages (not a ``document_level`` one, which rescores documents)."""
    return tuple(name for name in space_names() if not space_type(name).document_level)


def check_space_name(name: str) -> str:
    """``name`` if a space of that name is registered; else ValueError listing those that are (request types)."""
    if name not in space_names():
        raise ValueError(f"unknown space {name!r}; registered: {', '.join(space_names())}")
    return name


def space_type(name: str) -> type[Space]:
    """The class of a registered space, importing its module the first time; NotFound names the known ones."""
    return SPACES.get(name)


def build_spaces(embedders: Mapping[str, Embedder]) -> dict[str, Space]:
    """Every registered space whose embedder is loaded; building them loads no model (lazy embedders load
    on first use)."""
    spaces: dict[str, Space] = {}
    for name in SPACES.names():
        space = space_type(name).build(embedders)
        if space is not None:
            spaces[name] = space
    return spaces
