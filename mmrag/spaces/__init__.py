"""Retrieval spaces: how pages become vectors and queries become prefetch stages."""

from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.spaces.bm25 import Bm25Space
from mmrag.spaces.text import TextDenseSpace

__all__ = ["Bm25Space", "PageInput", "QueryInput", "Space", "TextDenseSpace"]
