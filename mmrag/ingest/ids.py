"""Content-derived identifiers: the same bytes always get the same ids."""

from __future__ import annotations

import hashlib
import uuid


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document_id(data: bytes) -> str:
    """32 hex chars of the sha256 of the file's bytes."""
    return sha256_hex(data)[:32]


def page_id(doc_id: str, number: int) -> str:
    """32 hex chars naming page ``number`` (1-based) of a document."""
    return sha256_hex(f"{doc_id}:{number}".encode())[:32]


def point_id(page: str) -> str:
    """The Qdrant point id (a UUID string) of a page id."""
    return str(uuid.UUID(hex=page[:32]))


def page_of_point(point: str) -> str:
    """The page id of a point id as both stores give it back (a canonical UUID string: lower-case,
    dashed): :func:`point_id`'s inverse, page ids being 32 hex chars."""
    return point.replace("-", "")
