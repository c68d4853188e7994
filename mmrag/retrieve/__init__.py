"""Retrieval: one plan over the spaces a request uses, hydrated into evidence."""

from mmrag.retrieve.search import Retriever

__all__ = ["Retriever"]
