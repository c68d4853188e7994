"""The catalog's database: its tables and the migrations of catalogs written by earlier versions.

Lifecycle: opened once by :class:`mmrag.catalog.Catalog`; the tables (:mod:`mmrag.catalog.corpora`,
:mod:`~mmrag.catalog.documents`, :mod:`~mmrag.catalog.pages`, :mod:`~mmrag.catalog.bm25_lengths`)
share it. Thread-safe (one connection, one lock, WAL journal).
"""

from __future__ import annotations

from pathlib import Path

from mmrag.sqlite_db import SqliteDB

_SCHEMA = """
CREATE TABLE IF NOT EXISTS corpora (
    name TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    corpus TEXT NOT NULL, id TEXT NOT NULL, filename TEXT NOT NULL, media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL, metadata TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (corpus, id));
CREATE INDEX IF NOT EXISTS documents_by_time ON documents (corpus, created_at);
CREATE TABLE IF NOT EXISTS pages (
    corpus TEXT NOT NULL, id TEXT NOT NULL, document_id TEXT NOT NULL, number INTEGER NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, image_hash TEXT NOT NULL, text_source TEXT NOT NULL,
    text TEXT NOT NULL, words TEXT NOT NULL, context TEXT NOT NULL DEFAULT '[]',
    table_header TEXT NOT NULL DEFAULT '[]', bm25_text TEXT, text_chars INTEGER, traits BLOB,
    PRIMARY KEY (corpus, id));
CREATE INDEX IF NOT EXISTS pages_by_document ON pages (corpus, document_id, number);
CREATE TABLE IF NOT EXISTS bm25_lengths (
    corpus TEXT NOT NULL, document_id TEXT NOT NULL, pages INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (corpus, document_id));
CREATE TABLE IF NOT EXISTS facts_revisions (
    corpus TEXT PRIMARY KEY, revision INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS bm25_indexed (
    corpus TEXT PRIMARY KEY, avg_len REAL, stale INTEGER NOT NULL, changed INTEGER NOT NULL DEFAULT 0);
"""

CORPUS_TABLES = (("pages", "corpus"), ("documents", "corpus"), ("corpora", "name"), ("bm25_lengths", "corpus"),
                 ("bm25_indexed", "corpus"), ("facts_revisions", "corpus"))
"""Every table with a corpus's rows, and its corpus column (what deleting a corpus empties)."""


class CatalogDB(SqliteDB):
    """``catalog.sqlite3`` with the current schema (an older catalog is migrated on opening)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _SCHEMA)
        self._add_page_columns()
        self._add_bm25_changed()

    def _add_page_columns(self) -> None:
        """Catalogs written before pages had a context get its columns (idempotent; old pages: none)."""
        with self._lock:
            for column in ("context", "table_header"):
                if column not in self._page_columns():
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {column} TEXT NOT NULL DEFAULT '[]'")
            if "bm25_text" not in self._page_columns():  # pages written before: BM25 indexed their text
                self._db.execute("ALTER TABLE pages ADD COLUMN bm25_text TEXT")
            if "text_chars" not in self._page_columns():  # pages written before: plain text, its length()
                self._db.execute("ALTER TABLE pages ADD COLUMN text_chars INTEGER")
            if "traits" not in self._page_columns():  # pages written before: their traits are read from the text
                self._db.execute("ALTER TABLE pages ADD COLUMN traits BLOB")

    def _add_bm25_changed(self) -> None:
        """Catalogs written before a re-weight waited for changed pages get the count (idempotent; 0: none yet)."""
        with self._lock:
            if "changed" not in {r[1] for r in self.rows("PRAGMA table_info(bm25_indexed)")}:
                self._db.execute("ALTER TABLE bm25_indexed ADD COLUMN changed INTEGER NOT NULL DEFAULT 0")

    def _page_columns(self) -> set[str]:
        return {r[1] for r in self.rows("PRAGMA table_info(pages)")}
