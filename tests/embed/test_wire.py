"""Binary vector format and per-item request decoding (image bomb guard, texts)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from mmrag.embed.wire import check_text, decode_vectors, encode_vectors
from mmrag.errors import CorruptDocument, InvalidInput, TooLarge
from mmrag.imaging import decode_image


def test_roundtrip_multivector_float32_is_exact() -> None:
    rng = np.random.default_rng(0)
    vecs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 1, 17)]
    buf = encode_vectors(vecs, multivector=True)
    assert buf[:4] == b"MMRV" and len(buf) == 12 + 3 * 8 + 21 * 8 * 4
    out = decode_vectors(buf)
    assert [o.shape for o in out] == [(3, 8), (1, 8), (17, 8)]
    for a, b in zip(vecs, out, strict=True):
        np.testing.assert_array_equal(a, b)


def test_roundtrip_dense_float16() -> None:
    vecs = [np.linspace(-1, 1, 5, dtype=np.float32), np.ones(5, dtype=np.float32)]
    buf = encode_vectors(vecs, multivector=False, dtype="float16")
    assert len(buf) == 12 + 2 * 8 + 2 * 5 * 2
    out = decode_vectors(buf)
    assert [o.shape for o in out] == [(5,), (5,)] and out[0].dtype == np.float32
    np.testing.assert_allclose(out[0], vecs[0], atol=1e-3)


def test_decode_rejects_bad_buffers() -> None:
    good = encode_vectors([np.zeros((2, 2), np.float32)], multivector=True)
    for bad in (b"", b"XXXX" + good[4:], good[:-1], good + b"\0"):
        with pytest.raises(InvalidInput):
            decode_vectors(bad)
    with pytest.raises(InvalidInput):
        encode_vectors([np.zeros(2)], multivector=False, dtype="int8")


def png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (10, 20, 30)).save(buf, format="PNG")
    return buf.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims a size (valid CRC) but carries no pixel data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_decode_image_ok() -> None:
    img = decode_image(png(30, 20), max_bytes=10**6, max_pixels=10**6)
    assert img.size == (30, 20) and img.mode == "RGB"


def test_decode_image_refuses_bombs_before_decoding() -> None:
    with pytest.raises(TooLarge, match="pixels"):
        decode_image(png_claiming(100_000, 100_000), max_bytes=10**6, max_pixels=40_000_000)
    with pytest.raises(TooLarge, match="allowed at most 1000000"):  # our limit, below Pillow's own
        decode_image(png_claiming(2000, 1000), max_bytes=10**6, max_pixels=1_000_000)
    with pytest.raises(TooLarge, match="bytes"):
        decode_image(png(30, 20), max_bytes=10, max_pixels=10**6)


def test_decode_image_refuses_zero_size_empty_and_garbage() -> None:
    with pytest.raises(InvalidInput):
        decode_image(png_claiming(0, 10), max_bytes=10**6, max_pixels=10**6)
    with pytest.raises(InvalidInput, match="0 bytes"):
        decode_image(b"", max_bytes=10**6, max_pixels=10**6)
    with pytest.raises(CorruptDocument, match="allowed: PNG"):
        decode_image(b"definitely not an image", max_bytes=10**6, max_pixels=10**6)
    with pytest.raises(CorruptDocument):
        decode_image(png(30, 20)[:60], max_bytes=10**6, max_pixels=10**6)  # truncated


def test_check_text() -> None:
    assert check_text("hi", 0, max_chars=5) == "hi"
    with pytest.raises(TooLarge, match="allowed at most 5"):
        check_text("x" * 6, 2, max_chars=5)
    with pytest.raises(InvalidInput):
        check_text("  ", 0, max_chars=5)
    with pytest.raises(InvalidInput, match="allowed: string"):
        check_text(3, 0, max_chars=5)
