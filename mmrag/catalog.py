"""The catalog: corpora, documents and pages in SQLite, page images as files.

Layout under the data folder::

    catalog.sqlite3                      corpora, documents, pages (text + word boxes, compressed:
                                         :mod:`mmrag.catalog_text`, :mod:`mmrag.ingest.word_boxes`)
    corpora/<corpus>/sources/<doc>.pdf   each document's PDF, kept once: pages render from it on demand
    corpora/<corpus>/pages/<page>.png    pages that cannot be re-rendered (OCRed, image uploads)
                                         (:mod:`mmrag.ingest.page_store`)

Lifecycle: one :class:`Catalog` per process, thread-safe (one connection, one lock,
WAL journal). A document row is written last, after its pages and vectors, so a
document that is listed is complete.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.catalog_bm25 import Bm25Statistics
from mmrag.catalog_text import pack_text, pack_variant, unpack_text, unpack_variant
from mmrag.config import CorpusConfig
from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.ingest.doc_facts import DocumentFacts, StoredFacts
from mmrag.ingest.page_context import section_line
from mmrag.ingest.page_store import PageImageStore, RenderSpec
from mmrag.ingest.word_boxes import pack_words, unpack_words
from mmrag.sqlite_db import SqliteDB
from mmrag.types import Document, DocumentInfo, Page, PageInfo, TextSource, Word

CORPUS_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS corpora (
    name TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    corpus TEXT NOT NULL, id TEXT NOT NULL, filename TEXT NOT NULL, media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL, metadata TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (corpus, id));
CREATE TABLE IF NOT EXISTS pages (
    corpus TEXT NOT NULL, id TEXT NOT NULL, document_id TEXT NOT NULL, number INTEGER NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, image_hash TEXT NOT NULL, text_source TEXT NOT NULL,
    text TEXT NOT NULL, words TEXT NOT NULL, context TEXT NOT NULL DEFAULT '[]',
    table_header TEXT NOT NULL DEFAULT '[]', bm25_text TEXT, text_chars INTEGER, PRIMARY KEY (corpus, id));
CREATE INDEX IF NOT EXISTS pages_by_document ON pages (corpus, document_id, number);
CREATE TABLE IF NOT EXISTS bm25_lengths (
    corpus TEXT NOT NULL, document_id TEXT NOT NULL, pages INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (corpus, document_id));
CREATE TABLE IF NOT EXISTS facts_revisions (
    corpus TEXT PRIMARY KEY, revision INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bm25_indexed (
    corpus TEXT PRIMARY KEY, avg_len REAL, stale INTEGER NOT NULL);
"""


def check_corpus_name(name: str) -> str:
    if not CORPUS_NAME.match(name or ""):
        raise InvalidInput(f"corpus name {name!r} is not allowed: use 1-63 characters of a-z, 0-9, '-' "
                           "and '_', starting with a letter or digit")
    return name


@dataclass(frozen=True, slots=True)
class CorpusRow:
    """One corpus as listed: its config and what it holds."""

    name: str
    config: CorpusConfig
    created_at: float  # unix time
    documents: int  # listed (fully indexed) documents
    pages: int  # their pages


@dataclass(frozen=True, slots=True)
class PageText:
    """A page's text as BM25 indexes it."""

    page_id: str
    document_id: str
    text: str  # :attr:`mmrag.types.Page.indexed_text`
    context: str  # the page's section path as one line (:func:`mmrag.ingest.page_context.section_line`)


class Catalog(SqliteDB):
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.page_images = PageImageStore()
        super().__init__(data_dir / "catalog.sqlite3", _SCHEMA)
        self.bm25 = Bm25Statistics(self._db, self._lock)  # the corpora's BM25 lengths, in this database
        self._add_page_context()

    def _add_page_context(self) -> None:
        """Catalogs written before pages had a context get its columns (idempotent; old pages: none)."""
        with self._lock:
            for column in ("context", "table_header"):
                if column not in self._page_columns():
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {column} TEXT NOT NULL DEFAULT '[]'")
            if "bm25_text" not in self._page_columns():  # pages written before: BM25 indexed their text
                self._db.execute("ALTER TABLE pages ADD COLUMN bm25_text TEXT")
            if "text_chars" not in self._page_columns():  # pages written before: plain text, its length()
                self._db.execute("ALTER TABLE pages ADD COLUMN text_chars INTEGER")

    # corpora ---------------------------------------------------------------
    def create_corpus(self, name: str, config: CorpusConfig) -> None:
        check_corpus_name(name)
        with self._lock:
            try:
                self._db.execute("INSERT INTO corpora VALUES (?, ?, ?)", (name, config.model_dump_json(), time.time()))
            except sqlite3.IntegrityError as exc:
                raise Conflict(f"corpus {name!r} already exists") from exc

    def corpus_config(self, name: str) -> CorpusConfig:
        rows = self._rows("SELECT config FROM corpora WHERE name = ?", name)
        if not rows:
            raise NotFound(f"unknown corpus {name!r}; create it first (POST /corpora or mmrag ingest --corpus)")
        return CorpusConfig.model_validate_json(rows[0][0])

    def has_corpus(self, name: str) -> bool:
        return bool(self._rows("SELECT 1 FROM corpora WHERE name = ?", name))

    def list_corpora(self) -> list[CorpusRow]:
        return self._corpora("")

    def corpus_summary(self, name: str) -> CorpusRow:
        """One corpus (NotFound if unknown)."""
        rows = self._corpora("WHERE c.name = ?", name)
        if not rows:
            self.corpus_config(name)  # raises the NotFound that says what to do
        return rows[0]

    def _corpora(self, where: str, *args: object) -> list[CorpusRow]:
        rows = self._rows(
            "SELECT c.name, c.config, c.created_at, COUNT(d.id), COALESCE(SUM(d.page_count), 0) FROM corpora c "
            f"LEFT JOIN documents d ON d.corpus = c.name {where} GROUP BY c.name ORDER BY c.name", *args)
        return [CorpusRow(n, CorpusConfig.model_validate_json(c), float(t), int(d), int(p)) for n, c, t, d, p in rows]

    def delete_corpus(self, name: str) -> None:
        self.corpus_config(name)
        with self._lock:
            self._db.execute("BEGIN")
            for table, key in (("pages", "corpus"), ("documents", "corpus"), ("corpora", "name"),
                               ("bm25_lengths", "corpus"), ("bm25_indexed", "corpus"),
                               ("facts_revisions", "corpus")):
                self._db.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))
            self._db.execute("COMMIT")
        shutil.rmtree(self.corpus_dir(name), ignore_errors=True)

    def corpus_dir(self, name: str) -> Path:
        return self.data_dir / "corpora" / name

    # pages -------------------------------------------------------------------
    def save_page_images(self, corpus: str, pages: list[Page], source_pdf: bytes | None = None,
                         render: RenderSpec | None = None) -> None:
        """Keep the document's PDF once (pages render from it on demand) and the images that cannot be
        rendered again (OCRed pages, image uploads; every page when there is no PDF)."""
        self.page_images.save(self.corpus_dir(corpus), pages, source_pdf, render)

    def page_image(self, corpus: str, page_id: str) -> bytes:
        """PNG bytes of a page (NotFound for an unknown page): stored, or rendered from the kept PDF."""
        info = self.page_info(corpus, page_id)
        return self.page_images.image(self.corpus_dir(corpus), page_id, info.document_id, info.number)

    # documents ---------------------------------------------------------------
    def add_document(self, corpus: str, doc: Document) -> DocumentInfo:
        """Record a fully indexed document and its pages (one transaction). Texts are stored compressed
        (:mod:`mmrag.catalog_text`), the BM25 text against the page text and only where it differs."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN")
            for p in doc.pages:
                self._db.execute(
                    f"INSERT OR REPLACE INTO pages ({_PAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (corpus, p.id, doc.id, p.number, p.width, p.height, p.image_hash, p.text_source.value,
                     pack_text(p.text), pack_words(p.words, p.text), json.dumps(p.context),
                     json.dumps(p.table_header),
                     None if p.bm25_text in (None, p.text) else pack_variant(p.bm25_text, p.text), len(p.text)))
            self._db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (corpus, doc.id, doc.filename, doc.media_type, doc.size_bytes, len(doc.pages),
                 json.dumps(doc.metadata), now))
            self._db.execute("COMMIT")
        return self.document(corpus, doc.id)

    def documents_signature(self, corpus: str) -> tuple[int, str]:
        """(count, newest creation time and metadata size) of ``corpus``'s documents: changes when documents
        are added, deleted or their facts rewritten (``mmrag reindex-documents``)."""
        rows = self._rows("SELECT count(*), coalesce(max(created_at), ''), (SELECT coalesce(max(revision), 0) "
                          "FROM facts_revisions WHERE corpus = ?) FROM documents WHERE corpus = ?", corpus, corpus)
        return int(rows[0][0]), f"{rows[0][1]}|{rows[0][2]}"

    def set_document_metadata(self, corpus: str, doc_id: str, metadata: dict[str, Any]) -> None:
        """Replace a document's metadata (its re-derived facts, :mod:`mmrag.jobs.doc_reindex`)."""
        with self._lock:
            self._db.execute("UPDATE documents SET metadata = ? WHERE corpus = ? AND id = ?",
                             (json.dumps(metadata), corpus, doc_id))
            self._db.execute("INSERT INTO facts_revisions VALUES (?, 1) ON CONFLICT (corpus) "
                             "DO UPDATE SET revision = revision + 1", (corpus,))

    def document_facts(self, corpus: str) -> list[StoredFacts]:
        """The facts of every document of ``corpus`` (``metadata.doc``, set at ingestion)."""
        rows = self._rows("SELECT id, filename, json_extract(metadata, '$.doc') FROM documents WHERE corpus = ?",
                          corpus)
        return [StoredFacts(id_, name, DocumentFacts.from_dict(json.loads(facts) if facts else None))
                for id_, name, facts in rows]

    def page_counts(self, corpus: str, doc_ids: list[str]) -> dict[str, int]:
        """document id -> its number of pages, for those of ``doc_ids`` in ``corpus``."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return dict(self._rows(f"SELECT id, page_count FROM documents WHERE corpus = ? AND id IN ({marks})",
                               corpus, *ids))

    def _doc_info(self, corpus: str, row: tuple[Any, ...]) -> DocumentInfo:
        id_, filename, media, size, count, meta, created = row
        return DocumentInfo(id=id_, corpus=corpus, filename=filename, media_type=media, size_bytes=size,
                            page_count=count, metadata=json.loads(meta), created_at=created)

    def find_document(self, corpus: str, doc_id: str) -> DocumentInfo | None:
        rows = self._rows("SELECT id, filename, media_type, size_bytes, page_count, metadata, created_at "
                          "FROM documents WHERE corpus = ? AND id = ?", corpus, doc_id)
        return self._doc_info(corpus, rows[0]) if rows else None

    def document(self, corpus: str, doc_id: str) -> DocumentInfo:
        info = self.find_document(corpus, doc_id)
        if info is None:
            self.corpus_config(corpus)
            raise NotFound(f"unknown document {doc_id!r} in corpus {corpus!r}")
        return info

    def list_documents(self, corpus: str, *, offset: int = 0, limit: int = 1000) -> list[DocumentInfo]:
        self.corpus_config(corpus)
        rows = self._rows("SELECT id, filename, media_type, size_bytes, page_count, metadata, created_at FROM "
                          "documents WHERE corpus = ? ORDER BY created_at, id LIMIT ? OFFSET ?", corpus, limit, offset)
        return [self._doc_info(corpus, r) for r in rows]

    def delete_document(self, corpus: str, doc_id: str) -> list[str]:
        """Remove the rows and page images; returns the page ids removed."""
        self.document(corpus, doc_id)
        page_ids = [r[0] for r in self._rows("SELECT id FROM pages WHERE corpus = ? AND document_id = ?",
                                             corpus, doc_id)]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM documents WHERE corpus = ? AND id = ?", (corpus, doc_id))
            self._db.execute("DELETE FROM pages WHERE corpus = ? AND document_id = ?", (corpus, doc_id))
            self._db.execute("DELETE FROM bm25_lengths WHERE corpus = ? AND document_id = ?", (corpus, doc_id))
            self._db.execute("COMMIT")
        self.page_images.delete(self.corpus_dir(corpus), doc_id, page_ids)
        return page_ids

    def pages_of(self, corpus: str, doc_id: str) -> list[PageInfo]:
        rows = self._rows(f"SELECT {_PAGE_INFO} FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number",
                          corpus, doc_id)
        return [_page_info(r) for r in rows]

    def stored_pages(self, corpus: str, doc_id: str) -> list[Page]:
        """The pages of a document as ingested (text, words, context; no images): what re-embedding reads."""
        rows = self._rows("SELECT id, number, width, height, image_hash, text_source, text, words, context, "
                          "table_header, bm25_text FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number",
                          corpus, doc_id)
        pages = []
        for r in rows:
            text = unpack_text(r[6])
            pages.append(Page(id=r[0], document_id=doc_id, number=r[1], width=r[2], height=r[3], image_hash=r[4],
                              text_source=TextSource(r[5]), text=text, words=unpack_words(r[7], text),
                              context=json.loads(r[8]), table_header=json.loads(r[9]),
                              bm25_text=None if r[10] is None else unpack_variant(r[10], text)))
        return pages

    def page_plain_texts(self, corpus: str, page_ids: list[str]) -> dict[str, str]:
        """page id -> its text (its words in reading order, joined by spaces; no boxes: cheap)."""
        if not page_ids:
            return {}
        marks = ",".join("?" * len(page_ids))
        rows = self._rows(f"SELECT id, text FROM pages WHERE corpus = ? AND id IN ({marks})", corpus, *page_ids)
        return {pid: unpack_text(t) for pid, t in rows}

    def page_words(self, corpus: str, page_ids: list[str]) -> dict[str, list[Word]]:
        if not page_ids:
            return {}
        marks = ",".join("?" * len(page_ids))
        rows = self._rows(f"SELECT id, text, words FROM pages WHERE corpus = ? AND id IN ({marks})", corpus, *page_ids)
        return {pid: unpack_words(w, unpack_text(t)) for pid, t, w in rows}

    def page_info(self, corpus: str, page_id: str) -> PageInfo:
        rows = self._rows(f"SELECT {_PAGE_INFO} FROM pages WHERE corpus = ? AND id = ?", corpus, page_id)
        if not rows:
            self.corpus_config(corpus)
            raise NotFound(f"unknown page {page_id!r} in corpus {corpus!r}")
        return _page_info(rows[0])

    def page_texts(self, corpus: str, doc_ids: list[str] | None = None) -> list[PageText]:
        """The texts BM25 indexes of the pages of ``corpus`` (of ``doc_ids`` if given), in document and page order."""
        sql = "SELECT id, document_id, text, bm25_text, context FROM pages WHERE corpus = ?"
        if doc_ids is None:
            rows = self._rows(sql + " ORDER BY document_id, number", corpus)
        else:
            rows = [r for d in doc_ids for r in self._rows(sql + " AND document_id = ? ORDER BY number", corpus, d)]
        return [PageText(str(i), str(d), _indexed_text(t, b), section_line(json.loads(c))) for i, d, t, b, c in rows]

    def _page_columns(self) -> set[str]:
        return {r[1] for r in self._rows("PRAGMA table_info(pages)")}


_PAGE_COLUMNS = "corpus, id, document_id, number, width, height, image_hash, text_source, text, words, context, " \
                "table_header, bm25_text, text_chars"
_PAGE_INFO = "id, document_id, number, width, height, image_hash, text_source, COALESCE(text_chars, length(text)), " \
             "context, table_header"


def _indexed_text(text: str | bytes, bm25_text: str | bytes | None) -> str:
    """The stored page's :attr:`mmrag.types.Page.indexed_text`."""
    plain = unpack_text(text)
    return plain if bm25_text is None else unpack_variant(bm25_text, plain)


def _page_info(r: tuple[Any, ...]) -> PageInfo:
    return PageInfo(r[0], r[1], r[2], r[3], r[4], r[5], TextSource(r[6]), r[7], json.loads(r[8]), json.loads(r[9]))

