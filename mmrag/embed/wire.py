"""Compact binary form of embedding results (content type ``application/x-mmrag-vectors``).

Used by the embedding service for multi-vectors (and for dense vectors when asked), and
decoded by :class:`mmrag.embed.service_client.RemoteEmbedder`. All integers little-endian::

    header   12 bytes  magic b"MMRV" | version u8 (=1) | dtype u8 (1=float16, 2=float32)
                       | flags u8 (bit 0: multi-vector) | reserved u8 (=0) | count u32
    shapes   8 x count bytes: rows u32, dim u32 per item
    data     for each item in order: rows*dim values, row-major, little-endian float16/float32

Dense vectors travel as ``rows=1`` with the multi-vector flag clear and decode to ``(dim,)``.
float16 halves the bytes; decoding always returns float32 arrays.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from mmrag.errors import InvalidInput, TooLarge

CONTENT_TYPE = "application/x-mmrag-vectors"
MAGIC = b"MMRV"
VERSION = 1
_HEADER = struct.Struct("<4sBBBBI")
_SHAPE = struct.Struct("<II")
_DTYPES: dict[int, np.dtype[Any]] = {1: np.dtype("<f2"), 2: np.dtype("<f4")}
_CODES = {"float16": 1, "float32": 2}


def encode_vectors(vectors: list[np.ndarray], *, multivector: bool, dtype: str = "float32") -> bytes:
    """Pack ``(dim,)`` (dense) or ``(rows, dim)`` (multi-vector) arrays into one buffer."""
    if dtype not in _CODES:
        raise InvalidInput(f"unknown vector dtype {dtype!r}; allowed: float16, float32")
    code = _CODES[dtype]
    parts = [_HEADER.pack(MAGIC, VERSION, code, 1 if multivector else 0, 0, len(vectors))]
    arrays = [np.atleast_2d(v) for v in vectors]
    parts.extend(_SHAPE.pack(a.shape[0], a.shape[1]) for a in arrays)
    parts.extend(np.ascontiguousarray(a, dtype=_DTYPES[code]).tobytes() for a in arrays)
    return b"".join(parts)


def decode_vectors(buffer: bytes) -> list[np.ndarray]:
    """Inverse of :func:`encode_vectors`; float32 arrays. Raises InvalidInput on a bad buffer."""
    if len(buffer) < _HEADER.size:
        raise InvalidInput(f"vector buffer of {len(buffer)} bytes is shorter than its header")
    magic, version, code, flags, _, count = _HEADER.unpack_from(buffer, 0)
    if magic != MAGIC or version != VERSION or code not in _DTYPES:
        raise InvalidInput(f"not an {CONTENT_TYPE} v{VERSION} buffer (magic {magic!r}, version {version})")
    dtype = _DTYPES[code]
    offset = _HEADER.size
    shapes = [_SHAPE.unpack_from(buffer, offset + i * _SHAPE.size) for i in range(count)]
    offset += count * _SHAPE.size
    if offset + sum(r * d for r, d in shapes) * dtype.itemsize != len(buffer):
        raise InvalidInput("vector buffer length does not match its shapes")
    out: list[np.ndarray] = []
    for rows, dim in shapes:
        a = np.frombuffer(buffer, dtype=dtype, count=rows * dim, offset=offset).reshape(rows, dim)
        offset += rows * dim * dtype.itemsize
        a = a.astype(np.float32)
        out.append(a if flags & 1 else a[0])
    return out


def check_text(text: object, index: int, *, max_chars: int) -> str:
    """One text input: a non-empty string of at most ``max_chars`` characters."""
    if not isinstance(text, str):
        raise InvalidInput(f"input[{index}] is a {type(text).__name__}; allowed: string")
    if not text.strip():
        raise InvalidInput(f"input[{index}] is empty; allowed: 1..{max_chars} characters")
    if len(text) > max_chars:
        raise TooLarge(f"input[{index}] has {len(text)} characters; allowed at most {max_chars}")
    return text
