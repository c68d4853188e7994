"""Spaces are registered like embedders and VLM backends: a name -> a class (or its dotted path); the
built-ins the same way, an extension beside them."""

from __future__ import annotations

import pytest

from mmrag.errors import NotFound
from mmrag.spaces import registry
from mmrag.spaces.bm25 import Bm25Space
from mmrag.spaces.document import DocumentSpace
from mmrag.spaces.text import TextDenseSpace
from mmrag.spaces.visual import ClipSpace, ColpaliSpace


class ExtraSpace(Bm25Space):
    name = "extra"


def test_built_in_spaces_are_built_from_the_loaded_embedders(minilm) -> None:
    spaces = registry.build_spaces({"text": minilm})
    assert {n: type(s) for n, s in spaces.items()} == {"text": TextDenseSpace, "bm25": Bm25Space,
                                                       "document": DocumentSpace}
    assert spaces["text"].embedder is minilm  # type: ignore[attr-defined]
    assert [registry.space_type(n) for n in ("clip", "colpali")] == [ClipSpace, ColpaliSpace]
    assert registry.space_names()[:5] == ("text", "bm25", "document", "clip", "colpali")


def test_a_registered_space_is_built_beside_the_built_ins_and_an_unknown_one_is_not_found(minilm) -> None:
    registry.register_space("extra", f"{__name__}:ExtraSpace")
    try:
        assert "extra" in registry.space_names()
        assert isinstance(registry.build_spaces({"text": minilm})["extra"], ExtraSpace)
    finally:
        registry.SPACES.entries.pop("extra")
    with pytest.raises(NotFound, match="unknown space 'extra'; known: text, bm25"):
        registry.space_type("extra")
