"""The catalog's documents: one row per fully indexed document, with its facts (``metadata.doc``).

A document row is written last, after its pages and vectors, so a document that is listed is complete.
Lifecycle: one per :class:`mmrag.catalog.Catalog`, over its database; thread-safe.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mmrag.catalog.corpora import CorpusTable
from mmrag.catalog.page_images import PageImageStore
from mmrag.catalog.text_codec import pack_text, pack_variant
from mmrag.catalog.word_boxes import pack_words
from mmrag.doc_facts import DocumentFacts, StoredFacts
from mmrag.errors import NotFound
from mmrag.sqlite_db import SqliteDB
from mmrag.types import Document, DocumentInfo

PAGE_COLUMNS = "corpus, id, document_id, number, width, height, image_hash, text_source, text, words, context, " \
               "table_header, bm25_text, text_chars, traits"
_DOCUMENT = "id, filename, media_type, size_bytes, page_count, metadata, created_at"


class DocumentTable:
    """The ``documents`` rows; adding or deleting a document writes or removes its pages with it."""

    def __init__(self, db: SqliteDB, corpora: CorpusTable, page_images: PageImageStore) -> None:
        self._db, self._corpora, self._page_images = db, corpora, page_images

    def add(self, corpus: str, doc: Document, traits: Mapping[str, bytes] | None = None) -> DocumentInfo:
        """Record a fully indexed document and its pages (one transaction). Texts are stored compressed
        (:mod:`mmrag.catalog.text_codec`), the BM25 text against the page text and only where it differs;
        ``traits``: page id -> what the ranker reads of it, packed (:mod:`mmrag.spaces.page_traits`; a page
        without: read from its text when searched)."""
        now = time.time()
        traits = traits or {}
        with self._db.transaction() as db:
            for p in doc.pages:
                db.execute(
                    f"INSERT OR REPLACE INTO pages ({PAGE_COLUMNS}) VALUES ({', '.join('?' * 15)})",
                    (corpus, p.id, doc.id, p.number, p.width, p.height, p.image_hash, p.text_source.value,
                     pack_text(p.text), pack_words(p.words, p.text), json.dumps(p.context),
                     json.dumps(p.table_header),
                     None if p.bm25_text in (None, p.text) else pack_variant(p.bm25_text, p.text), len(p.text),
                     traits.get(p.id)))
            db.execute(
                "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (corpus, doc.id, doc.filename, doc.media_type, doc.size_bytes, len(doc.pages),
                 json.dumps(doc.metadata), now))
        return self.get(corpus, doc.id)

    def signature(self, corpus: str) -> tuple[int, str, int]:
        """(count, newest creation time, facts revision) of ``corpus``'s documents: changes when documents are
        added or deleted (count, newest) or their facts rewritten (revision: ``mmrag reindex-documents``)."""
        rows = self._db.rows("SELECT count(*), coalesce(max(created_at), ''), (SELECT coalesce(max(revision), 0) "
                             "FROM facts_revisions WHERE corpus = ?) FROM documents WHERE corpus = ?", corpus, corpus)
        return int(rows[0][0]), str(rows[0][1]), int(rows[0][2])

    def set_metadata(self, corpus: str, doc_id: str, metadata: dict[str, Any]) -> None:
        """Replace a document's metadata (its re-derived facts, :mod:`mmrag.jobs.doc_reindex`)."""
        with self._db.transaction() as db:
            db.execute("UPDATE documents SET metadata = ? WHERE corpus = ? AND id = ?",
                       (json.dumps(metadata), corpus, doc_id))
            db.execute("INSERT INTO facts_revisions VALUES (?, 1) ON CONFLICT (corpus) "
                       "DO UPDATE SET revision = revision + 1", (corpus,))

    def facts(self, corpus: str, doc_ids: Sequence[str] | None = None) -> list[StoredFacts]:
        """The facts of every document of ``corpus`` (``metadata.doc``, set at ingestion), or of those of
        ``doc_ids``; oldest first (as :meth:`ids`)."""
        where, args = "", []
        if doc_ids is not None:
            if not doc_ids:
                return []
            where, args = f" AND id IN ({','.join('?' * len(doc_ids))})", list(doc_ids)
        rows = self._db.rows("SELECT id, filename, json_extract(metadata, '$.doc'), page_count FROM documents "
                             f"WHERE corpus = ?{where} ORDER BY created_at, id", corpus, *args)
        return [StoredFacts(id_, name, DocumentFacts.from_dict(json.loads(facts) if facts else None), pages)
                for id_, name, facts, pages in rows]

    def ids(self, corpus: str) -> list[str]:
        """The ids of ``corpus``'s documents, oldest first (the order of :meth:`facts`)."""
        return [r[0] for r in self._db.rows("SELECT id FROM documents WHERE corpus = ? ORDER BY created_at, id",
                                            corpus)]

    def page_counts(self, corpus: str, doc_ids: list[str]) -> dict[str, int]:
        """document id -> its number of pages, for those of ``doc_ids`` in ``corpus``."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return dict(self._db.rows(f"SELECT id, page_count FROM documents WHERE corpus = ? AND id IN ({marks})",
                                  corpus, *ids))

    def find(self, corpus: str, doc_id: str) -> DocumentInfo | None:
        rows = self._db.rows(f"SELECT {_DOCUMENT} FROM documents WHERE corpus = ? AND id = ?", corpus, doc_id)
        return _doc_info(corpus, rows[0]) if rows else None

    def get(self, corpus: str, doc_id: str) -> DocumentInfo:
        """The document; NotFound for an unknown corpus or document."""
        info = self.find(corpus, doc_id)
        if info is None:
            self._corpora.config(corpus)
            raise NotFound(f"unknown document {doc_id!r} in corpus {corpus!r}")
        return info

    def listed(self, corpus: str, *, offset: int = 0, limit: int = 1000) -> list[DocumentInfo]:
        self._corpora.config(corpus)
        rows = self._db.rows(f"SELECT {_DOCUMENT} FROM documents WHERE corpus = ? ORDER BY created_at, id "
                             "LIMIT ? OFFSET ?", corpus, limit, offset)
        return [_doc_info(corpus, r) for r in rows]

    def delete(self, corpus: str, doc_id: str) -> list[str]:
        """Remove the rows and page images; returns the page ids removed."""
        self.get(corpus, doc_id)
        page_ids = [r[0] for r in self._db.rows("SELECT id FROM pages WHERE corpus = ? AND document_id = ?",
                                                corpus, doc_id)]
        with self._db.transaction() as db:
            for table, key in (("documents", "id"), ("pages", "document_id"), ("bm25_lengths", "document_id")):
                db.execute(f"DELETE FROM {table} WHERE corpus = ? AND {key} = ?", (corpus, doc_id))
        self._page_images.delete(self._corpora.folder(corpus), doc_id, page_ids)
        return page_ids


def _doc_info(corpus: str, row: tuple[Any, ...]) -> DocumentInfo:
    id_, filename, media, size, count, meta, created = row
    return DocumentInfo(id=id_, corpus=corpus, filename=filename, media_type=media, size_bytes=size,
                        page_count=count, metadata=json.loads(meta), created_at=created)
