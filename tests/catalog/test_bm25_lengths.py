"""The catalog's BM25 length statistics: counted over listed documents only, deleted with them."""

from __future__ import annotations

from pathlib import Path

from mmrag.catalog import Catalog
from mmrag.catalog.bm25_lengths import Bm25Indexed, Bm25Totals
from mmrag.config import CorpusConfig
from mmrag.types import Document, Page, TextSource


def _doc(doc_id: str) -> Document:
    page = Page(id=f"{doc_id}-p1", document_id=doc_id, number=1, width=1, height=1, image_hash="h",
                text="some words", words=[], text_source=TextSource.LAYER)
    return Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf", size_bytes=1, pages=[page])


def test_lengths_count_listed_documents_and_go_with_them(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    stats = catalog.bm25
    stats.set_length("c", "d1", 3, 120)
    assert stats.totals("c") == Bm25Totals(0, 0)  # recorded before its row: not listed yet
    catalog.documents.add("c", _doc("d1"))
    catalog.documents.add("c", _doc("d2"))
    assert stats.totals("c") == Bm25Totals(3, 120)
    assert stats.documents_without_length("c") == ["d2"]
    stats.set_length("c", "d2", 1, 30)
    stats.set_length("c", "d2", 2, 40)  # idempotent: the last one counts
    assert stats.totals("c") == Bm25Totals(5, 160) and stats.documents_without_length("c") == []
    catalog.documents.delete("c", "d1")
    assert stats.totals("c") == Bm25Totals(2, 40)
    catalog.close()


def test_the_indexed_average_is_kept_per_corpus_until_the_corpus_goes(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path)
    for name in ("a", "b"):
        catalog.corpora.create(name, CorpusConfig(spaces=["bm25"]))
    assert catalog.bm25.indexed("a") == Bm25Indexed(None, False)
    catalog.bm25.set_indexed("a", 42.5, stale=True)
    assert catalog.bm25.indexed("a") == Bm25Indexed(42.5, True)
    assert catalog.bm25.indexed("b") == Bm25Indexed(None, False)
    catalog.corpora.delete("a")
    catalog.corpora.create("a", CorpusConfig(spaces=["bm25"]))
    assert catalog.bm25.indexed("a") == Bm25Indexed(None, False)
    catalog.close()


def test_a_document_recorded_or_deleted_again_after_a_crash_counts_its_pages_once(tmp_path: Path) -> None:
    """A kill between a document's count and its catalog row (or a deletion's count and the row's removal)
    made the redo count the pages twice: the next re-weight came at another moment than without the kill."""
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    stats = catalog.bm25
    stats.set_indexed("c", 50.0, stale=False)
    stats.set_length("c", "d1", 3, 120, count=True)
    stats.set_length("c", "d1", 3, 120, count=True)  # the file redone after a kill before its catalog row
    assert stats.indexed("c").changed == 3
    stats.set_length("c", "d2", 2, 80)  # not counted (a backfill of an old document)
    assert stats.indexed("c").changed == 3
    catalog.documents.add("c", _doc("d1"))
    stats.drop_length("c", "d1")
    stats.drop_length("c", "d1")  # the deletion finished again at the next start
    assert stats.indexed("c").changed == 6 and stats.length("c", "d1") is None
    catalog.close()
