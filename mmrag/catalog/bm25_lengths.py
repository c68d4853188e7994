"""The catalog's BM25 length statistics (read and written by :mod:`mmrag.jobs.bm25_stats`).

Two tables of the catalog's database (created with its schema; a document's row and a corpus's rows
are deleted with the document or corpus (:mod:`mmrag.catalog.documents`, :mod:`mmrag.catalog.corpora`)):

- ``bm25_lengths``: per document, its pages with BM25 tokens and their total length;
- ``bm25_indexed``: per corpus, the average length its stored BM25 vectors were indexed with, and the pages
  added or deleted since (what lets a re-weight wait until it is worth its cost).

Lifecycle: built by the catalog over its database (:attr:`Catalog.bm25`); thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmrag.sqlite_db import SqliteDB


@dataclass(frozen=True, slots=True)
class Bm25Totals:
    """A corpus's BM25 lengths summed over its listed documents."""

    pages: int  # pages with BM25 tokens
    length: int  # their tokens in all


@dataclass(frozen=True, slots=True)
class Bm25Indexed:
    """What a corpus's stored BM25 vectors were indexed with."""

    avg_len: float | None  # the average page length (None: each batch's own)
    stale: bool  # some vectors used another average: a re-weight is due
    changed: int = 0  # pages with BM25 tokens added or deleted since the average was set


class Bm25Statistics:
    """See the module docstring."""

    def __init__(self, db: SqliteDB) -> None:
        self._db = db

    def set_length(self, corpus: str, doc_id: str, pages: int, length: int, *, count: bool = False) -> None:
        """A document's pages with BM25 tokens and their total length (idempotent; deleted with the document).
        ``count``: the first time a document's length is set, its pages are counted as changed too (pages added
        or deleted since the corpus's average was set; no :meth:`indexed` row yet: nothing to count), in the same
        transaction, so a document recorded again after a crash counts once."""
        with self._db.transaction() as db:
            if count and not db.execute("SELECT 1 FROM bm25_lengths WHERE corpus = ? AND document_id = ?",
                                        (corpus, doc_id)).fetchone():
                db.execute("UPDATE bm25_indexed SET changed = changed + ? WHERE corpus = ?", (pages, corpus))
            db.execute("INSERT OR REPLACE INTO bm25_lengths VALUES (?, ?, ?, ?)", (corpus, doc_id, pages, length))

    def drop_length(self, corpus: str, doc_id: str) -> None:
        """A document being deleted: its pages counted as changed and its length removed, in one transaction (a
        deletion finished again after a crash finds no length and counts nothing twice)."""
        with self._db.transaction() as db:
            row = db.execute("SELECT pages FROM bm25_lengths WHERE corpus = ? AND document_id = ?",
                             (corpus, doc_id)).fetchone()
            if row is not None:
                db.execute("UPDATE bm25_indexed SET changed = changed + ? WHERE corpus = ?", (row[0], corpus))
                db.execute("DELETE FROM bm25_lengths WHERE corpus = ? AND document_id = ?", (corpus, doc_id))

    def totals(self, corpus: str) -> Bm25Totals:
        """The pages and total length over the listed documents of ``corpus``."""
        rows = self._db.rows("SELECT COALESCE(SUM(b.pages), 0), COALESCE(SUM(b.length), 0) FROM bm25_lengths b "
                          "JOIN documents d ON d.corpus = b.corpus AND d.id = b.document_id WHERE b.corpus = ?", corpus)
        return Bm25Totals(int(rows[0][0]), int(rows[0][1]))

    def documents_without_length(self, corpus: str) -> list[str]:
        """Listed documents with no recorded length (indexed before the statistics existed)."""
        rows = self._db.rows("SELECT d.id FROM documents d LEFT JOIN bm25_lengths b ON b.corpus = d.corpus AND "
                          "b.document_id = d.id WHERE d.corpus = ? AND b.document_id IS NULL", corpus)
        return [r[0] for r in rows]

    def length(self, corpus: str, doc_id: str) -> Bm25Totals | None:
        """A document's recorded pages with BM25 tokens and their length (None: none recorded)."""
        rows = self._db.rows("SELECT pages, length FROM bm25_lengths WHERE corpus = ? AND document_id = ?",
                             corpus, doc_id)
        return Bm25Totals(int(rows[0][0]), int(rows[0][1])) if rows else None

    def indexed(self, corpus: str) -> Bm25Indexed:
        rows = self._db.rows("SELECT avg_len, stale, changed FROM bm25_indexed WHERE corpus = ?", corpus)
        return Bm25Indexed(rows[0][0], bool(rows[0][1]), int(rows[0][2])) if rows else Bm25Indexed(None, False)

    def set_indexed(self, corpus: str, avg_len: float | None, stale: bool) -> None:
        """What the corpus's vectors are indexed with from now on (no page changed since)."""
        self._db.execute("INSERT OR REPLACE INTO bm25_indexed (corpus, avg_len, stale, changed) VALUES (?, ?, ?, 0)",
                         corpus, avg_len, int(stale))
