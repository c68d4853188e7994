"""Page texts as the catalog stores them: zlib-compressed UTF-8 (``BLOB``), a page's BM25 text
compressed against its page text (``zdict``: the shared words cost back-references, so the labelled
table text costs a few hundred bytes instead of a second copy). Lossless.

Rows written before hold plain ``TEXT``; both are read (the stored value's type tells them apart).
"""

from __future__ import annotations

import zlib

_LEVEL = 9  # a page is a few kB: the best level costs well under a millisecond


def pack_text(text: str) -> bytes:
    """The stored form of a page text."""
    return zlib.compress(text.encode("utf-8"), _LEVEL)


def unpack_text(stored: str | bytes) -> str:
    """A page text from its stored form (``str``: a row written before texts were compressed)."""
    return stored if isinstance(stored, str) else zlib.decompress(stored).decode("utf-8")


def pack_variant(text: str, base: str) -> bytes:
    """The stored form of ``text``, a variant of ``base`` (the page's BM25 text of its page text)."""
    packer = zlib.compressobj(_LEVEL, zdict=base.encode("utf-8"))
    return packer.compress(text.encode("utf-8")) + packer.flush()


def unpack_variant(stored: str | bytes, base: str) -> str:
    """A variant from its stored form and its ``base`` (``str``: a row written before)."""
    if isinstance(stored, str):
        return stored
    unpacker = zlib.decompressobj(zdict=base.encode("utf-8"))
    return (unpacker.decompress(stored) + unpacker.flush()).decode("utf-8")
