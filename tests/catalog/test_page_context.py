"""The catalog keeps each page's context; a catalog written before pages had one keeps working."""

from __future__ import annotations

import sqlite3

from mmrag.catalog import Catalog
from mmrag.catalog.pages import PageText
from mmrag.config import CorpusConfig
from mmrag.types import Document, Page, TextSource, Word

OLD_SCHEMA = """
CREATE TABLE corpora (name TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE documents (
    corpus TEXT NOT NULL, id TEXT NOT NULL, filename TEXT NOT NULL, media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL, metadata TEXT NOT NULL,
    created_at REAL NOT NULL, PRIMARY KEY (corpus, id));
CREATE TABLE pages (
    corpus TEXT NOT NULL, id TEXT NOT NULL, document_id TEXT NOT NULL, number INTEGER NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, image_hash TEXT NOT NULL, text_source TEXT NOT NULL,
    text TEXT NOT NULL, words TEXT NOT NULL, PRIMARY KEY (corpus, id));
"""


def _page(doc_id: str, number: int, context: list[str], header: list[str]) -> Page:
    words = [Word("hello", (0.1, 0.1, 0.2, 0.2)), Word("world", (0.3, 0.1, 0.4, 0.2))]
    return Page(id=f"{doc_id[:30]}{number:02d}", document_id=doc_id, number=number, width=10, height=10,
                image_hash="h", text="hello world", words=words, text_source=TextSource.LAYER, context=context,
                table_header=header)


def test_old_catalog_gets_the_context_columns_and_keeps_its_pages(tmp_path):
    db = sqlite3.connect(tmp_path / "catalog.sqlite3")
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO corpora VALUES ('c', ?, 0)", (CorpusConfig().model_dump_json(),))
    db.execute("INSERT INTO documents VALUES ('c', 'old', 'old.pdf', 'application/pdf', 1, 1, '{}', 0)")
    db.execute("INSERT INTO pages VALUES ('c', 'p-old', 'old', 1, 10, 10, 'h', 'layer', 'old text', '')")
    db.commit()
    db.close()

    for _ in range(2):  # the migration runs once; opening again changes nothing
        catalog = Catalog(tmp_path)
        old = catalog.pages.of_document("c", "old")
        assert [(p.id, p.context, p.table_header) for p in old] == [("p-old", [], [])]
        assert catalog.pages.texts("c", ["old"]) == [PageText("p-old", "old", "old text", "")]
        assert catalog.pages.packed_traits("c", ["p-old"]) == {}  # none stored: the ranker reads its text
        catalog.close()

    catalog = Catalog(tmp_path)
    doc_id = "n" * 32
    pages = [_page(doc_id, 1, ["Part I", "Item 2"], []), _page(doc_id, 2, ["Part I", "Item 2"], ["Region", "Revenue"])]
    catalog.documents.add("c", Document(id=doc_id, filename="new.pdf", media_type="application/pdf", size_bytes=1,
                                       pages=pages))
    info = catalog.pages.of_document("c", doc_id)
    assert [(p.context, p.table_header) for p in info] == [(["Part I", "Item 2"], []),
                                                           (["Part I", "Item 2"], ["Region", "Revenue"])]
    assert catalog.pages.info("c", pages[1].id).table_header == ["Region", "Revenue"]
    back = catalog.pages.stored("c", doc_id)
    assert [(p.id, p.text, [w.text for w in p.words], p.context, p.table_header) for p in back] == \
        [(p.id, p.text, [w.text for w in p.words], p.context, p.table_header) for p in pages]
    assert catalog.pages.texts("c", [doc_id])[0].context == "Part I > Item 2"
    catalog.close()
