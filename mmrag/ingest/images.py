"""Uploaded image types and PNG encoding of pages; decoding is :mod:`mmrag.imaging` (re-exported here)."""

from __future__ import annotations

import io

from PIL import Image

from mmrag.imaging import ALLOWED, decode_image, image_size, open_image, to_rgb

IMAGE_TYPES = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/webp": "WEBP",
    "image/tiff": "TIFF",
    "image/bmp": "BMP",
    "image/gif": "GIF",
}


def encode_png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


__all__ = ["ALLOWED", "IMAGE_TYPES", "decode_image", "encode_png", "image_size", "open_image", "to_rgb"]
