"""A PDF page rendered as displayed, the one render every stage sees: ingestion (for the visual embedders
and OCR), the catalog's page images (rendered again from the kept PDF) and so the VLM.

A top-level module so that the catalog renders pages without importing the ingestion stack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PIL import Image

if TYPE_CHECKING:
    import pymupdf  # imported where a page is rendered: a search that renders nothing does not load it


@dataclass(frozen=True, slots=True)
class RenderSpec:
    """How a document's pages were rendered at ingest (the page store renders them again the same way)."""

    dpi: int  # the IngestConfig.dpi pages were rendered at
    max_page_pixels: int  # and its pixel cap


def render_zoom(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> float:
    """Zoom factor for ``dpi``, lowered so the render stays within ``max_pixels``."""
    zoom = dpi / 72.0
    pixels = width_pt * zoom * height_pt * zoom
    if pixels > max_pixels:
        zoom *= math.sqrt(max_pixels / pixels) * 0.995  # pixmaps round sizes up
    return zoom


def pixmap_matrix(page: pymupdf.Page, dpi: int, max_pixels: int) -> tuple[pymupdf.Matrix, tuple[int, int]]:
    """The render matrix and the pixel size of the render it makes."""
    import pymupdf

    zoom = render_zoom(page.rect.width, page.rect.height, dpi, max_pixels)
    matrix = pymupdf.Matrix(zoom, zoom)
    irect = (page.rect * matrix).irect
    return matrix, (irect.width, irect.height)


def render_image(page: pymupdf.Page, dpi: int, max_pixels: int) -> Image.Image:
    """The page as displayed, at ``dpi`` under the pixel cap ``max_pixels`` (what the page store and the visual
    embedders see)."""
    import pymupdf

    matrix, _ = pixmap_matrix(page, dpi, max_pixels)
    pix = page.get_pixmap(matrix=matrix, alpha=False, colorspace=pymupdf.csRGB)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
