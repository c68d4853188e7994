"""Retrieval spaces: how pages become vectors and queries become prefetch stages."""

from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.spaces.text import Bm25Space, TextDenseSpace

__all__ = ["Bm25Space", "PageInput", "QueryInput", "Space", "TextDenseSpace"]
