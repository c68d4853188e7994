"""Decoding images safely, the one way for every stage: size checks from the header before any pixel
is decoded (decompression-bomb guard), first frame, EXIF orientation, RGB with transparency on white;
and page images encoded as PNG (:func:`encode_png`).

A top-level module (not in :mod:`mmrag.ingest`) so that the embedding service and the VLM backends
use it without importing the PDF and conversion stack.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps

from mmrag.errors import CorruptDocument, InvalidInput, TooLarge

ALLOWED = "PNG, JPEG, WebP, TIFF, BMP, GIF"
"""The image formats accepted, for error messages."""


def open_image(data: bytes, *, max_pixels: int, max_bytes: int | None = None, what: str = "image") -> Image.Image:
    """Open an image from its header only, checked: not empty, at most ``max_bytes`` bytes, a non-zero
    size of at most ``max_pixels`` pixels (so a decompression bomb costs nothing). No pixel is decoded.

    Raises InvalidInput (empty), TooLarge (bytes or pixels) or CorruptDocument (not an image Pillow reads).
    """
    if not data:
        raise InvalidInput(f"{what} is empty: 0 bytes")
    if max_bytes is not None and len(data) > max_bytes:
        raise TooLarge(f"{what} is {len(data)} bytes; allowed at most {max_bytes}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            width, height = img.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise TooLarge(f"{what} is a decompression bomb: {exc}") from exc
    except Exception as exc:  # UnidentifiedImageError, truncated header, bad fields, ...
        raise CorruptDocument(f"{what} cannot be decoded ({exc}); allowed: {ALLOWED}") from exc
    if width <= 0 or height <= 0:
        raise CorruptDocument(f"{what} has zero size ({width}x{height})")
    if width * height > max_pixels:
        raise TooLarge(f"{what} is {width}x{height} = {width * height} pixels; allowed at most {max_pixels}")
    return img


def decode_image(data: bytes, *, max_pixels: int, max_bytes: int | None = None, what: str = "image",
                 opened: Image.Image | None = None) -> Image.Image:
    """Decode to an RGB image (first frame of animations, oriented as EXIF says, transparency on white),
    after the checks of :func:`open_image` (``opened``: already opened and checked). The one image
    decoder of ingest, search, the embedding service and the VLM backends."""
    img = opened or open_image(data, max_pixels=max_pixels, max_bytes=max_bytes, what=what)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img.seek(0)  # first frame of GIF/TIFF/WebP animations
            img.load()
            oriented = ImageOps.exif_transpose(img) or img
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise TooLarge(f"{what} is a decompression bomb: {exc}") from exc
    except Exception as exc:  # truncated data, bad chunks, ...
        raise CorruptDocument(f"{what} cannot be decoded ({exc}); allowed: {ALLOWED}") from exc
    return to_rgb(oriented)


def decode_query_image(data: bytes, *, max_pixels: int, what: str = "query image") -> Image.Image:
    """A query image decoded to at most ``max_pixels``: a JPEG over it decodes at 1/2, 1/4 or 1/8 scale
    (``Image.draft``: the DCT is reduced, the full image never exists); any other format over it is
    refused from its header (TooLarge) before a pixel is decoded."""
    jpeg = data[:3] == b"\xff\xd8\xff"  # decodable at 1/8 scale: 64 times the pixels may come in
    try:
        img = open_image(data, max_pixels=max_pixels * (64 if jpeg else 1), what=what)
    except TooLarge as exc:
        raise TooLarge(f"{exc.message} (MMRAG_RETRIEVE__MAX_QUERY_IMAGE_PIXELS)") from exc
    width, height = img.size
    if width * height > max_pixels:
        scale = 2
        while scale < 8 and (width // scale) * (height // scale) > max_pixels:
            scale *= 2
        img.draft("RGB", (width // scale, height // scale))
        if img.size[0] * img.size[1] > max_pixels:
            raise TooLarge(f"{what} is {width}x{height} pixels; even at 1/8 scale it is over the limit of "
                           f"{max_pixels:,} (MMRAG_RETRIEVE__MAX_QUERY_IMAGE_PIXELS)")
    return decode_image(data, max_pixels=max_pixels, what=what, opened=img)


def image_size(data: bytes, *, max_pixels: int, what: str = "image") -> tuple[int, int]:
    """(width, height) of the image :func:`decode_image` would return (EXIF rotations applied), from
    the header only."""
    img = open_image(data, max_pixels=max_pixels, what=what)
    width, height = img.size
    orientation = img.getexif().get(0x0112)  # EXIF Orientation; 5..8 turn the image by 90 degrees
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def to_rgb(img: Image.Image) -> Image.Image:
    """RGB, with transparency flattened onto white."""
    if img.mode == "RGB":
        return img
    if img.mode in ("RGBA", "LA", "P", "PA"):
        rgba = img.convert("RGBA")
        background = Image.new("RGB", img.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.split()[-1])
        return background
    return img.convert("RGB")


def encode_png(img: Image.Image) -> bytes:
    """A page image as PNG (fast compression: page renders are stored and served, rarely re-read)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
