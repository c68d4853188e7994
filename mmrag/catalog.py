"""The catalog: corpora, documents and pages in SQLite, page images as files.

Layout under the data folder::

    catalog.sqlite3                      corpora, documents, pages (text + word boxes)
    corpora/<corpus>/pages/<page>.png    rendered pages

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
from pathlib import Path
from typing import Any

from mmrag.config import CorpusConfig
from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.sqlite_db import SqliteDB
from mmrag.types import BBox, Document, DocumentInfo, Page, PageInfo, TextSource, Word

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
    text TEXT NOT NULL, words TEXT NOT NULL, PRIMARY KEY (corpus, id));
CREATE INDEX IF NOT EXISTS pages_by_document ON pages (corpus, document_id, number);
"""


def check_corpus_name(name: str) -> str:
    if not CORPUS_NAME.match(name or ""):
        raise InvalidInput(f"corpus name {name!r} is not allowed: use 1-63 characters of a-z, 0-9, '-' "
                           "and '_', starting with a letter or digit")
    return name


def _words_json(words: list[Word]) -> str:
    return json.dumps([[w.text, [round(v, 5) for v in w.bbox]] for w in words], ensure_ascii=False)


def _words(data: str) -> list[Word]:
    return [Word(text=t, bbox=tuple(b)) for t, b in json.loads(data)]  # type: ignore[arg-type]


class Catalog(SqliteDB):
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        super().__init__(data_dir / "catalog.sqlite3", _SCHEMA)

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

    def list_corpora(self) -> list[tuple[str, CorpusConfig, float, int, int]]:
        """(name, config, created_at, documents, pages) for each corpus."""
        rows = self._rows(
            "SELECT c.name, c.config, c.created_at, COUNT(d.id), COALESCE(SUM(d.page_count), 0) FROM corpora c "
            "LEFT JOIN documents d ON d.corpus = c.name GROUP BY c.name ORDER BY c.name")
        return [(n, CorpusConfig.model_validate_json(c), t, int(d), int(p)) for n, c, t, d, p in rows]

    def delete_corpus(self, name: str) -> None:
        self.corpus_config(name)
        with self._lock:
            self._db.execute("BEGIN")
            for table, key in (("pages", "corpus"), ("documents", "corpus"), ("corpora", "name")):
                self._db.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))
            self._db.execute("COMMIT")
        shutil.rmtree(self.corpus_dir(name), ignore_errors=True)

    def corpus_dir(self, name: str) -> Path:
        return self.data_dir / "corpora" / name

    # pages -------------------------------------------------------------------
    def page_image_path(self, corpus: str, page_id: str) -> Path:
        return self.corpus_dir(corpus) / "pages" / f"{page_id}.png"

    def save_page_images(self, corpus: str, pages: list[Page]) -> None:
        folder = self.corpus_dir(corpus) / "pages"
        folder.mkdir(parents=True, exist_ok=True)
        for page in pages:
            if page.image_png is None:
                continue
            path = folder / f"{page.id}.png"
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(page.image_png)
            tmp.replace(path)

    # documents ---------------------------------------------------------------
    def add_document(self, corpus: str, doc: Document) -> DocumentInfo:
        """Record a fully indexed document and its pages (one transaction)."""
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN")
            for p in doc.pages:
                self._db.execute(
                    "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (corpus, p.id, doc.id, p.number, p.width, p.height, p.image_hash, p.text_source.value,
                     p.text, _words_json(p.words)))
            self._db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (corpus, doc.id, doc.filename, doc.media_type, doc.size_bytes, len(doc.pages),
                 json.dumps(doc.metadata), now))
            self._db.execute("COMMIT")
        return self.document(corpus, doc.id)

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
            self._db.execute("COMMIT")
        for pid in page_ids:
            self.page_image_path(corpus, pid).unlink(missing_ok=True)
        return page_ids

    def pages_of(self, corpus: str, doc_id: str) -> list[PageInfo]:
        rows = self._rows("SELECT id, document_id, number, width, height, image_hash, text_source, length(text) "
                          "FROM pages WHERE corpus = ? AND document_id = ? ORDER BY number", corpus, doc_id)
        return [PageInfo(r[0], r[1], r[2], r[3], r[4], r[5], TextSource(r[6]), r[7]) for r in rows]

    def page_words(self, corpus: str, page_ids: list[str]) -> dict[str, list[Word]]:
        if not page_ids:
            return {}
        marks = ",".join("?" * len(page_ids))
        rows = self._rows(f"SELECT id, words FROM pages WHERE corpus = ? AND id IN ({marks})", corpus, *page_ids)
        return {pid: _words(w) for pid, w in rows}

    def page_info(self, corpus: str, page_id: str) -> PageInfo:
        rows = self._rows("SELECT id, document_id, number, width, height, image_hash, text_source, length(text) "
                          "FROM pages WHERE corpus = ? AND id = ?", corpus, page_id)
        if not rows:
            self.corpus_config(corpus)
            raise NotFound(f"unknown page {page_id!r} in corpus {corpus!r}")
        r = rows[0]
        return PageInfo(r[0], r[1], r[2], r[3], r[4], r[5], TextSource(r[6]), r[7])


def boxes_of(words: list[Word], start: int, end: int) -> list[BBox]:
    return [w.bbox for w in words[start:end]]
