"""The catalog stores page text, BM25 text and word boxes compressed and reads them back through its
methods exactly as written; rows written before (plain text, ``b16:`` boxes, no ``text_chars``) read
as before, beside new ones."""

from __future__ import annotations

import base64
import sqlite3

import numpy as np

from mmrag.catalog import Catalog
from mmrag.catalog.pages import PageText
from mmrag.config import CorpusConfig
from mmrag.types import Document, Page, TextSource, Word

WORDS = [Word(f"w{i}é", (round(0.05 + (i % 10) * 0.09, 4), 0.1 + (i // 10) * 0.02,
                         round(0.12 + (i % 10) * 0.09, 4), 0.11 + (i // 10) * 0.02)) for i in range(60)]
TEXT = " ".join(w.text for w in WORDS)


def _page(doc_id: str, number: int, bm25_text: str | None) -> Page:
    return Page(id=f"{doc_id[:4]}{number:02d}", document_id=doc_id, number=number, width=10, height=10,
                image_hash="h", text=TEXT, words=WORDS, text_source=TextSource.LAYER, context=["Part I"],
                bm25_text=bm25_text)


def _doc(doc_id: str, pages: list[Page]) -> Document:
    return Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf", size_bytes=1, pages=pages)


def test_pages_read_back_as_written_and_are_stored_compressed(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig())
    labelled = "Revenue: " + TEXT
    pages = [_page("docA", 1, labelled), _page("docA", 2, None), _page("docA", 3, TEXT)]
    catalog.documents.add("c", _doc("docA", pages))

    back = catalog.pages.stored("c", "docA")
    assert [(p.text, p.bm25_text, p.context) for p in back] == [(TEXT, labelled, ["Part I"]), (TEXT, None, ["Part I"]),
                                                               (TEXT, None, ["Part I"])]  # equal to text: not kept
    for p in back:
        assert [w.text for w in p.words] == [w.text for w in WORDS]
        got, want = np.array([w.bbox for w in p.words]), np.array([w.bbox for w in WORDS])
        assert np.abs(got - want).max() < 1e-4
    assert {k: [w.text for w in v] for k, v in catalog.pages.words("c", [pages[0].id]).items()} == \
        {pages[0].id: [w.text for w in WORDS]}
    assert [t.text for t in catalog.pages.texts("c", ["docA"])] == [labelled, TEXT, TEXT]
    assert [p.text_chars for p in catalog.pages.of_document("c", "docA")] == [len(TEXT)] * 3

    stored = catalog._db.rows("SELECT text, words, bm25_text FROM pages WHERE id = ?", pages[0].id)[0]
    assert all(isinstance(v, bytes) for v in stored)
    assert len(stored[0]) * 2 < len(TEXT.encode()) and len(stored[2]) * 4 < len(labelled.encode())
    assert len(stored[1]) < 4 * len(WORDS)  # under 4 bytes a word (the b16 text: 11)
    catalog.close()


def test_rows_written_before_read_beside_new_ones(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig())
    catalog.close()
    db = sqlite3.connect(tmp_path / "catalog.sqlite3")
    boxes = np.rint(np.array([w.bbox for w in WORDS]) * 65535).astype("<u2").tobytes()
    db.execute("INSERT INTO documents VALUES ('c', 'old', 'old.pdf', 'application/pdf', 1, 1, '{}', 0)")
    db.execute("INSERT INTO pages (corpus, id, document_id, number, width, height, image_hash, text_source, text, "
               "words, bm25_text) VALUES ('c', 'p-old', 'old', 1, 10, 10, 'h', 'layer', ?, ?, 'old bm25')",
               (TEXT, "b16:" + base64.b64encode(boxes).decode()))
    db.commit()
    db.close()

    catalog = Catalog(tmp_path)
    catalog.documents.add("c", _doc("docN", [_page("docN", 1, None)]))
    old, new = catalog.pages.stored("c", "old")[0], catalog.pages.stored("c", "docN")[0]
    assert (old.text, old.bm25_text) == (TEXT, "old bm25")
    assert [w.bbox for w in old.words] == [w.bbox for w in new.words]  # the same quantisation, both forms
    assert catalog.pages.of_document("c", "old")[0].text_chars == len(TEXT)
    assert catalog.pages.texts("c") == [PageText("docN01", "docN", TEXT, "Part I"),
                                       PageText("p-old", "old", "old bm25", "")]
    catalog.close()
