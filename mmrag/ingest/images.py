"""Decoding uploaded images safely: pixel-bomb guard, first frame, EXIF orientation, RGB."""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps, UnidentifiedImageError

from mmrag.errors import CorruptDocument, TooLarge

IMAGE_TYPES = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/webp": "WEBP",
    "image/tiff": "TIFF",
    "image/bmp": "BMP",
    "image/gif": "GIF",
}


def decode_image(data: bytes, *, max_pixels: int, what: str = "image") -> Image.Image:
    """Decode to an RGB image, oriented as EXIF says. The size is checked from the header,
    before any pixel is decoded, so a decompression bomb costs nothing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            width, height = img.size
            if width <= 0 or height <= 0:
                raise CorruptDocument(f"{what} has zero size ({width}x{height})")
            if width * height > max_pixels:
                raise TooLarge(
                    f"{what} is {width}x{height} = {width * height:,} pixels; the limit is {max_pixels:,} "
                    "(MMRAG_INGEST__MAX_IMAGE_PIXELS)"
                )
            img.seek(0)  # first frame of GIF/TIFF/WebP animations
            img.load()
    except (TooLarge, CorruptDocument):
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise TooLarge(f"{what} is a decompression bomb: {exc}") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise CorruptDocument(
            f"{what} cannot be decoded ({exc}); allowed: PNG, JPEG, WebP, TIFF, BMP, GIF"
        ) from exc
    return to_rgb(ImageOps.exif_transpose(img) or img)


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
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
