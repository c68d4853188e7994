"""Storage of what was ingested: corpora, documents and pages in SQLite, page images as files.

Layout under the data folder::

    catalog.sqlite3                      corpora, documents, pages (text + word boxes, compressed:
                                         :mod:`mmrag.catalog.text_codec`, :mod:`mmrag.catalog.word_boxes`),
                                         BM25 length statistics (:mod:`mmrag.catalog.bm25_lengths`)
    corpora/<corpus>/sources/<doc>.pdf   each document's PDF, kept once: pages render from it on demand
    corpora/<corpus>/pages/<page>.png    pages that cannot be re-rendered (OCRed, image uploads)
                                         (:mod:`mmrag.catalog.page_images`)

The package imports no other stage: ingestion, jobs and retrieval read and write through it.
"""

from __future__ import annotations

from pathlib import Path

from mmrag.catalog.bm25_lengths import Bm25Statistics
from mmrag.catalog.corpora import CorpusTable
from mmrag.catalog.documents import DocumentTable
from mmrag.catalog.page_images import PageImageStore, PageRenderer, render_in_process
from mmrag.catalog.pages import PageTable
from mmrag.catalog.schema import CatalogDB


class Catalog:
    """The catalog of one data folder, by what it holds: ``corpora``, ``documents``, ``pages`` and the
    corpora's ``bm25`` length statistics, all in one database.

    Lifecycle: one per process, thread-safe (one connection, one lock, WAL journal); ``close`` at exit.
    """

    def __init__(self, data_dir: Path, page_renderer: PageRenderer = render_in_process) -> None:
        self.data_dir = data_dir
        self._db = CatalogDB(data_dir / "catalog.sqlite3")
        images = PageImageStore(renderer=page_renderer)  # the service passes the parse workers' renderer
        self.corpora = CorpusTable(self._db, data_dir / "corpora")
        self.documents = DocumentTable(self._db, self.corpora, images)
        self.pages = PageTable(self._db, self.corpora, images)
        self.bm25 = Bm25Statistics(self._db)

    def close(self) -> None:
        self._db.close()
