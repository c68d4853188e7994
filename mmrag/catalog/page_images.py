"""Page images that scale with the corpus: the document's PDF is kept once, pages render on demand.

Layout under a corpus folder::

    sources/<document>.pdf     the uploaded PDF, or the PDF a non-PDF upload was converted to
    sources/<document>.json    how its pages were rendered at ingest (dpi, pixel cap)
    pages/<page>.png           only pages that cannot be re-rendered from the PDF: OCRed pages
                               (turned upright), image uploads, and corpora ingested before

A page image is rendered again from the kept PDF with the parameters recorded at ingest, by the
same function (:func:`mmrag.page_render.render_image`) that renders it for the embedders, so the
page store, the visual embedders and the VLM see the same pixels. Who renders is the store's
``renderer``: the composition root gives it the parse workers' (:mod:`mmrag.jobs.page_renders`: a
hostile PDF's render runs in a process with a clock and a memory limit, never in the service);
:func:`render_in_process` is the default of a catalog built alone. Rendered PNGs are kept in a bounded
in-memory LRU cache (``cache_bytes``).

Lifecycle: one per catalog; thread-safe (one lock around the cache).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from mmrag.errors import NotFound
from mmrag.imaging import encode_png
from mmrag.page_render import RenderSpec, render_image
from mmrag.types import Page, TextSource


def _atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


PageRenderer = Callable[[Path, int, RenderSpec], bytes]
"""(the kept PDF, a 1-based page number, how it was rendered at ingest) -> the page's PNG."""


def render_in_process(pdf: Path, number: int, spec: RenderSpec) -> bytes:
    """The page rendered in this process (a catalog used alone: tools, tests)."""
    import pymupdf  # 1-2 s of imports: only when a page image is rendered

    with pymupdf.open(pdf) as doc:
        return encode_png(render_image(doc.load_page(number - 1), spec.dpi, spec.max_page_pixels))


class PageImageStore:
    def __init__(self, cache_bytes: int = 128 << 20, renderer: PageRenderer = render_in_process) -> None:
        self.cache_bytes = cache_bytes
        self.renderer = renderer
        self._cache: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def needs_file(page: Page) -> bool:
        """Whether the page's image must be stored: it cannot be rendered again from the PDF."""
        return page.text_source is TextSource.OCR

    def save(self, corpus_dir: Path, pages: list[Page], source_pdf: bytes | None, spec: RenderSpec | None) -> None:
        """Keep the document's PDF once (if given) and the images of pages that need a file."""
        if source_pdf is not None and spec is not None and pages:
            folder = corpus_dir / "sources"
            folder.mkdir(parents=True, exist_ok=True)
            stem = folder / pages[0].document_id
            if not stem.with_suffix(".pdf").exists():
                spec_json = json.dumps({"dpi": spec.dpi, "max_page_pixels": spec.max_page_pixels})
                _atomic(stem.with_suffix(".json"), spec_json.encode())
                _atomic(stem.with_suffix(".pdf"), source_pdf)
        folder = corpus_dir / "pages"
        folder.mkdir(parents=True, exist_ok=True)
        for page in pages:
            if page.image_png is not None and (source_pdf is None or self.needs_file(page)):
                _atomic(folder / f"{page.id}.png", page.image_png)

    def image(self, corpus_dir: Path, page_id: str, document_id: str, number: int) -> bytes:
        """PNG bytes of a page: its stored file, else rendered from the kept PDF (cached)."""
        path = corpus_dir / "pages" / f"{page_id}.png"
        if path.exists():
            return path.read_bytes()
        key = (str(corpus_dir), page_id)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        png = self._render(corpus_dir / "sources" / document_id, number, page_id)
        with self._lock:
            if key not in self._cache and len(png) <= self.cache_bytes:
                self._cache[key] = png
                self._size += len(png)
                while self._size > self.cache_bytes:
                    _, old = self._cache.popitem(last=False)
                    self._size -= len(old)
        return png

    def _render(self, stem: Path, number: int, page_id: str) -> bytes:
        if not stem.with_suffix(".pdf").exists():
            raise NotFound(f"image of page {page_id!r} is missing")
        spec = json.loads(stem.with_suffix(".json").read_text())
        return self.renderer(stem.with_suffix(".pdf"), number, RenderSpec(spec["dpi"], spec["max_page_pixels"]))

    def delete(self, corpus_dir: Path, document_id: str, page_ids: list[str]) -> None:
        for pid in page_ids:
            (corpus_dir / "pages" / f"{pid}.png").unlink(missing_ok=True)
        for suffix in (".pdf", ".json"):
            (corpus_dir / "sources" / f"{document_id}{suffix}").unlink(missing_ok=True)
        with self._lock:
            for key in [k for k in self._cache if k[1] in set(page_ids)]:
                self._size -= len(self._cache.pop(key))
