"""The documents and pages as the shells read them (pipeline.documents): one page with its document's
file name, text and word boxes; NotFound for what is not there."""

from __future__ import annotations

import pytest

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.documents import Documents
from mmrag.errors import NotFound
from mmrag.types import Document, Page, TextSource, Word


def test_a_page_is_read_with_its_document_text_and_words(tmp_path):
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig())
    words = [Word("Net", (0.1, 0.1, 0.2, 0.15)), Word("income", (0.21, 0.1, 0.4, 0.15))]
    page = Page(id="p1", document_id="d1", number=1, width=10, height=20, image_hash="h", text="Net income",
                words=words, text_source=TextSource.LAYER, context=["Results"])
    catalog.documents.add("c", Document(id="d1", filename="report.pdf", media_type="application/pdf",
                                        size_bytes=3, pages=[page]))
    documents = Documents(catalog)
    view = documents.page("c", "p1")
    assert (view.filename, view.text, view.info.context, view.info.height) == ("report.pdf", "Net income",
                                                                               ["Results"], 20)
    assert [w.text for w in view.words] == ["Net", "income"]  # boxes as stored (16-bit fixed point)
    pairs = [(a, b) for w, v in zip(words, view.words, strict=True) for a, b in zip(w.bbox, v.bbox, strict=True)]
    assert max(abs(a - b) for a, b in pairs) < 1e-4
    assert [d.filename for d in documents.listed("c")] == ["report.pdf"] and documents.find("c", "nope") is None
    assert [p.id for p in documents.pages("c", "d1")] == ["p1"]
    with pytest.raises(NotFound, match="unknown page 'p2'"):
        documents.page("c", "p2")
    with pytest.raises(NotFound, match="image of page 'p1' is missing"):  # no PDF kept, no file: said so
        documents.page_image("c", "p1")
    catalog.close()
