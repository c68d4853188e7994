"""Parse a range of pages of an upload: the CPU stage's unit of work (a page batch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from mmrag.config import IngestConfig
from mmrag.ingest.page_context import SectionState
from mmrag.ingest.parse import ParseResult, parse_image, parse_pdf_batch
from mmrag.ingest.sniff import KINDS
from mmrag.types import Page


def needs_images(spaces: Iterable[str], config: IngestConfig) -> bool:
    """Whether parse renders (and PNG-encodes) page images: a space of the corpus embeds pixels, or every
    page's PNG is kept as a file (``keep_page_files``). Otherwise the page store renders on demand. A CPU
    worker builds no spaces: it reads ``needs_image`` from the registered space classes."""
    from mmrag.spaces.registry import space_type  # not in the parse worker, which imports this module

    return config.keep_page_files or any(space_type(s).needs_image for s in spaces)


def parse_pages(data: bytes, kind: str, doc_id: str, filename: str, config: IngestConfig,
                first: int, last: int, images: bool = True, on_page: Callable[[int], None] | None = None,
                carried: SectionState | None = None) -> ParseResult:
    """Pages ``first..last`` (1-based, inclusive) of ``data``, an image upload or a PDF (the upload or
    its conversion) as the plan stage's ``kind`` says, with text layer or OCR, rendered if ``images``
    (OCRed pages and image uploads always are); ``on_page`` is told each PDF page's number as its work starts;
    ``carried``: where an earlier batch's section reading stopped. Runs in a parse worker process
    (:mod:`mmrag.jobs.parse_worker`): the input is untrusted."""
    if KINDS[kind].family == "image":
        return ParseResult(parse_image(data, doc_id, filename, config), None)
    return parse_pdf_batch(data, doc_id, config, first, last, images, on_page, carried)


def split_images(pages: list[Page]) -> tuple[list[Page], list[bytes | None]]:
    """Pages without their PNGs (small, for the catalog) and the PNGs (for the page store and embedders)."""
    return [replace(p, image_png=None) for p in pages], [p.image_png for p in pages]


def stage_timings(pages: list[Page]) -> dict[str, float]:
    """A batch's per-page timings summed by step (``parse_text``, ``parse_tables``, ``parse_render``,
    ``parse_encode_png``, ``parse_ocr``, ...): what the job's timings add up."""
    out: dict[str, float] = {}
    for p in pages:
        for step, seconds in p.timings.items():
            out[f"parse_{step}"] = out.get(f"parse_{step}", 0.0) + seconds
    return out
