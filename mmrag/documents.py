"""The stored documents and pages as the shells read them: listings, one document, one page with its
text and word boxes, a page image. Reads only; documents are written by jobs and deleted through
:class:`mmrag.corpora.Corpora`.

Lifecycle: one per process, built by :func:`mmrag.pipeline.build_pipeline` over the catalog; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.types import DocumentInfo, PageInfo, Word


@dataclass(frozen=True, slots=True)
class PageView:
    """One page as a reader sees it."""

    info: PageInfo
    filename: str  # its document's file name
    text: str  # its words in reading order, joined by spaces
    words: Sequence[Word]  # with their boxes, normalised to the page as displayed


@dataclass
class Documents:
    """Every read raises NotFound for an unknown corpus, document or page."""

    catalog: Catalog

    def listed(self, corpus: str, *, offset: int = 0, limit: int = 1000) -> list[DocumentInfo]:
        return self.catalog.documents.listed(corpus, offset=offset, limit=limit)

    def get(self, corpus: str, document_id: str) -> DocumentInfo:
        return self.catalog.documents.get(corpus, document_id)

    def find(self, corpus: str, document_id: str) -> DocumentInfo | None:
        """The document, or None when it is not (or no longer) listed."""
        return self.catalog.documents.find(corpus, document_id)

    def pages(self, corpus: str, document_id: str) -> list[PageInfo]:
        return self.catalog.pages.of_document(corpus, document_id)

    def page(self, corpus: str, page_id: str) -> PageView:
        info = self.catalog.pages.info(corpus, page_id)
        doc = self.catalog.documents.get(corpus, info.document_id)
        words = self.catalog.pages.words(corpus, [page_id]).get(page_id, [])
        text = self.catalog.pages.plain_texts(corpus, [page_id]).get(page_id, "")
        return PageView(info, doc.filename, text, words)

    def page_image(self, corpus: str, page_id: str) -> bytes:
        """PNG bytes of the page: stored, or rendered from the document's kept PDF."""
        return self.catalog.pages.image(corpus, page_id)
