"""Ingest: bytes in, a :class:`mmrag.types.Document` with rendered pages and text out."""

from mmrag.ingest.parse import parse_document

__all__ = ["parse_document"]
