"""The catalog by what it holds: corpora, documents, pages share one database; a document's rows and a
corpus's rows (in every table) and files go together; unknown names are NotFound saying what to do."""

from __future__ import annotations

import pytest

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.doc_facts import DocumentFacts
from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.types import Document, Page, TextSource, Word


def _doc(doc_id: str, pages: int = 2) -> Document:
    facts = DocumentFacts(title=f"{doc_id} annual report", periods=["FY2023"])
    words = [Word("page", (0, 0, 0.5, 0.1)), Word("n", (0.5, 0, 1, 0.1))]
    return Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf", size_bytes=10,
                    metadata={"doc": facts.as_dict()},
                    pages=[Page(id=f"{doc_id}-{n}", document_id=doc_id, number=n, width=10, height=10, image_hash="h",
                                text=f"page {n}", words=words,
                                text_source=TextSource.OCR, image_png=b"png", context=["Part I"])
                           for n in range(1, pages + 1)])


def test_a_corpus_is_listed_with_what_it_holds_and_deleted_from_every_table(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["text", "bm25"]))
    with pytest.raises(Conflict, match="already exists"):
        catalog.corpora.create("c", CorpusConfig())
    with pytest.raises(InvalidInput, match="a-z, 0-9"):
        catalog.corpora.create("Bad Name", CorpusConfig())
    doc = _doc("d1")
    catalog.pages.save_images("c", doc.pages)  # OCRed pages: their images are files
    catalog.documents.add("c", doc)
    catalog.bm25.set_length("c", "d1", 2, 4)
    [row] = catalog.corpora.listed()
    assert (row.name, row.documents, row.pages, row.config.spaces) == ("c", 1, 2, ["text", "bm25"])
    assert catalog.pages.image("c", "d1-1") == b"png" and catalog.corpora.folder("c").is_dir()
    catalog.corpora.delete("c")
    assert not catalog.corpora.exists("c") and not catalog.corpora.folder("c").exists()
    assert catalog.bm25.totals("c").pages == 0
    with pytest.raises(NotFound, match="create it first"):
        catalog.documents.listed("c")
    catalog.close()


def test_documents_and_pages_read_back_and_go_together(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig())
    catalog.documents.add("c", _doc("d1"))
    catalog.documents.add("c", _doc("d2", pages=1))
    assert [d.id for d in catalog.documents.listed("c")] == ["d1", "d2"]
    assert catalog.documents.page_counts("c", ["d1", "d2", "nope"]) == {"d1": 2, "d2": 1}
    assert [f.facts.title for f in catalog.documents.facts("c")] == ["d1 annual report", "d2 annual report"]
    before = catalog.documents.signature("c")
    catalog.documents.set_metadata("c", "d1", {"doc": DocumentFacts(title="renamed").as_dict()})
    assert catalog.documents.signature("c") != before and catalog.documents.get("c", "d1").metadata["doc"]["title"] \
        == "renamed"
    info = catalog.pages.info("c", "d1-2")
    assert (info.document_id, info.number, info.context) == ("d1", 2, ["Part I"])
    assert catalog.pages.plain_texts("c", ["d1-2"]) == {"d1-2": "page 2"}
    assert catalog.pages.texts_and_sections("c", ["d1-2", "nope"]) == {"d1-2": ("page 2", ["Part I"])}
    assert catalog.pages.places("c", ["d2-1", "d1-2", "nope"]) == {"d2-1": ("d2", 1), "d1-2": ("d1", 2)}
    assert catalog.pages.first_of_document("c", "d1", 1) == [("d1-1", 1)]
    assert catalog.pages.first_of_document("c", "d1", 5) == [("d1-1", 1), ("d1-2", 2)]
    assert [t.context for t in catalog.pages.texts("c", ["d2"])] == ["Part I"]
    assert catalog.documents.delete("c", "d1") == ["d1-1", "d1-2"]
    assert catalog.documents.find("c", "d1") is None and catalog.pages.of_document("c", "d1") == []
    with pytest.raises(NotFound, match="unknown document 'd1' in corpus 'c'"):
        catalog.documents.get("c", "d1")
    with pytest.raises(NotFound, match="unknown page 'd1-1' in corpus 'c'"):
        catalog.pages.image("c", "d1-1")
    with pytest.raises(NotFound, match="unknown corpus 'other'"):
        catalog.pages.info("other", "d2-1")
    catalog.close()
