"""The catalog's pages: what ingestion read of each page (text, word boxes, section path), and its image.

Rows are written with their document (:meth:`mmrag.catalog.documents.DocumentTable.add`); texts and
boxes are stored compressed (:mod:`mmrag.catalog.text_codec`, :mod:`mmrag.catalog.word_boxes`).
Lifecycle: one per :class:`mmrag.catalog.Catalog`, over its database; thread-safe.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mmrag.catalog.corpora import CorpusTable
from mmrag.catalog.page_images import PageImageStore
from mmrag.catalog.text_codec import unpack_text, unpack_variant
from mmrag.catalog.word_boxes import unpack_words
from mmrag.errors import NotFound
from mmrag.page_render import RenderSpec
from mmrag.sqlite_db import SqliteDB
from mmrag.types import Page, PageInfo, TextSource, Word, section_line

_PAGE_INFO = "id, document_id, number, width, height, image_hash, text_source, COALESCE(text_chars, length(text)), " \
             "context, table_header"


@dataclass(frozen=True, slots=True)
class PageText:
    """A page's text as BM25 indexes it."""

    page_id: str
    document_id: str
    text: str  # :attr:`mmrag.types.Page.indexed_text`
    context: str  # the page's section path as one line (:func:`mmrag.types.section_line`)


class PageTable:
    """The ``pages`` rows, read by page or by document; page images through the page store."""

    def __init__(self, db: SqliteDB, corpora: CorpusTable, images: PageImageStore) -> None:
        self._db, self._corpora, self._images = db, corpora, images

    def of_document(self, corpus: str, doc_id: str) -> list[PageInfo]:
        rows = self._db.rows(f"SELECT {_PAGE_INFO} FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number",
                             corpus, doc_id)
        return [_page_info(r) for r in rows]

    def first_of_document(self, corpus: str, doc_id: str, limit: int) -> list[tuple[str, int]]:
        """(page id, number) of the document's first ``limit`` pages, in order (no row parsed: cheap)."""
        return [(r[0], r[1]) for r in self._db.rows(
            "SELECT id, number FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number LIMIT ?",
            corpus, doc_id, limit)]

    def _rows_of(self, corpus: str, page_ids: list[str], columns: str) -> list[tuple[Any, ...]]:
        """``id`` and ``columns`` of those of ``page_ids`` the corpus has (one query)."""
        if not page_ids:
            return []
        marks = ",".join("?" * len(page_ids))
        return self._db.rows(f"SELECT id, {columns} FROM pages WHERE corpus = ? AND id IN ({marks})",
                             corpus, *page_ids)

    def places(self, corpus: str, page_ids: list[str]) -> dict[str, tuple[str, int]]:
        """page id -> (its document id, its number), for those of ``page_ids`` the corpus has."""
        return {pid: (doc, number) for pid, doc, number in self._rows_of(corpus, page_ids, "document_id, number")}

    def stored(self, corpus: str, doc_id: str) -> list[Page]:
        """The pages of a document as ingested (text, words, context; no images): what re-embedding reads."""
        rows = self._db.rows("SELECT id, number, width, height, image_hash, text_source, text, words, context, "
                             "table_header, bm25_text FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number",
                             corpus, doc_id)
        pages = []
        for r in rows:
            text = unpack_text(r[6])
            pages.append(Page(id=r[0], document_id=doc_id, number=r[1], width=r[2], height=r[3], image_hash=r[4],
                              text_source=TextSource(r[5]), text=text, words=list(unpack_words(r[7], text)),
                              context=json.loads(r[8]), table_header=json.loads(r[9]),
                              bm25_text=None if r[10] is None else unpack_variant(r[10], text)))
        return pages

    def plain_texts(self, corpus: str, page_ids: list[str]) -> dict[str, str]:
        """page id -> its text (its words in reading order, joined by spaces; no boxes: cheap)."""
        return {pid: unpack_text(t) for pid, t in self._rows_of(corpus, page_ids, "text")}

    def texts_and_sections(self, corpus: str, page_ids: list[str]) -> dict[str, tuple[str, list[str]]]:
        """page id -> (its plain text as :meth:`plain_texts` gives it, its section path)."""
        return {pid: (unpack_text(t), json.loads(c)) for pid, t, c in self._rows_of(corpus, page_ids, "text, context")}

    def packed_traits(self, corpus: str, page_ids: list[str]) -> dict[str, bytes]:
        """page id -> what the ranker reads of it as ingestion stored it (:mod:`mmrag.spaces.page_traits`), for
        those of ``page_ids`` that have it (a page written before traits were stored has none)."""
        return {pid: bytes(t) for pid, t in self._rows_of(corpus, page_ids, "traits") if t is not None}

    def set_traits(self, corpus: str, traits: Mapping[str, bytes]) -> None:
        """Store ``traits`` (page id -> packed traits) of pages of ``corpus`` (one transaction)."""
        with self._db.transaction() as db:
            db.executemany("UPDATE pages SET traits = ? WHERE corpus = ? AND id = ?",
                           [(packed, corpus, pid) for pid, packed in traits.items()])

    def words(self, corpus: str, page_ids: list[str]) -> dict[str, Sequence[Word]]:
        return {pid: unpack_words(w, unpack_text(t)) for pid, t, w in self._rows_of(corpus, page_ids, "text, words")}

    def info(self, corpus: str, page_id: str) -> PageInfo:
        """The page; NotFound for an unknown corpus or page."""
        rows = self._db.rows(f"SELECT {_PAGE_INFO} FROM pages WHERE corpus = ? AND id = ?", corpus, page_id)
        if not rows:
            self._corpora.config(corpus)
            raise NotFound(f"unknown page {page_id!r} in corpus {corpus!r}")
        return _page_info(rows[0])

    def texts(self, corpus: str, doc_ids: list[str] | None = None) -> list[PageText]:
        """The texts BM25 indexes of the pages of ``corpus`` (of ``doc_ids`` if given), in document and page order."""
        sql = "SELECT id, document_id, text, bm25_text, context FROM pages WHERE corpus = ?"
        if doc_ids is None:
            rows = self._db.rows(sql + " ORDER BY document_id, number", corpus)
        else:
            rows = [r for d in doc_ids for r in self._db.rows(sql + " AND document_id = ? ORDER BY number", corpus, d)]
        return [PageText(str(i), str(d), _indexed_text(t, b), section_line(json.loads(c))) for i, d, t, b, c in rows]

    def save_images(self, corpus: str, pages: list[Page], source_pdf: bytes | None = None,
                    render: RenderSpec | None = None) -> None:
        """Keep the document's PDF once (pages render from it on demand) and the images that cannot be
        rendered again (OCRed pages, image uploads; every page when there is no PDF)."""
        self._images.save(self._corpora.folder(corpus), pages, source_pdf, render)

    def image(self, corpus: str, page_id: str) -> bytes:
        """PNG bytes of a page (NotFound for an unknown page): stored, or rendered from the kept PDF."""
        info = self.info(corpus, page_id)
        return self._images.image(self._corpora.folder(corpus), page_id, info.document_id, info.number)


def _indexed_text(text: str | bytes, bm25_text: str | bytes | None) -> str:
    """The stored page's :attr:`mmrag.types.Page.indexed_text`."""
    plain = unpack_text(text)
    return plain if bm25_text is None else unpack_variant(bm25_text, plain)


def _page_info(r: tuple[Any, ...]) -> PageInfo:
    return PageInfo(r[0], r[1], r[2], r[3], r[4], r[5], TextSource(r[6]), r[7], json.loads(r[8]), json.loads(r[9]))
