"""Stored pages rendered on demand in the parse workers, not in the service (issue 42).

The page store (:class:`mmrag.catalog.page_images.PageImageStore`) renders a page again from the kept PDF
whenever someone needs its pixels (the page image routes, the VLM's pages, a search by a page's image).
:func:`worker_renderer` is the renderer the composition root gives it: one call to the same bounded pool
ingestion uses (:class:`mmrag.jobs.parse_pool.ParsePool`), under the page's clock
(``page_timeout_s``), the call's (``parse_timeout_s``) and the workers' memory limit, the page's drawing
cost checked before it is drawn. A hostile page fails ``too_complex`` (its worker killed and replaced), a
crash ``corrupt_document``; the service stays up.
"""

from __future__ import annotations

from pathlib import Path

from mmrag.catalog.page_images import PageRenderer
from mmrag.config import IngestConfig
from mmrag.errors import Unavailable
from mmrag.jobs.parse_pool import ParseInterrupted, ParsePool
from mmrag.jobs.parse_worker import ParseRequest
from mmrag.page_render import RenderSpec


def worker_renderer(pool: ParsePool, config: IngestConfig) -> PageRenderer:
    """The page store's renderer: a page of a kept PDF drawn in a parse worker, as it was at ingest."""

    def render(pdf: Path, number: int, spec: RenderSpec) -> bytes:
        drawn = config.model_copy(update={"dpi": spec.dpi, "max_page_pixels": spec.max_page_pixels})
        request = ParseRequest("render", b"", "pdf", f"document {pdf.stem}", drawn, first=number, last=number,
                               path=str(pdf))
        try:
            png: bytes = pool.call(request)
        except ParseInterrupted as exc:
            raise Unavailable(f"page {number} was not rendered: {exc}") from exc
        return png

    return render
