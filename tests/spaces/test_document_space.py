"""The document space: every page of a document carries the same evidence vectors; no evidence, none."""

from __future__ import annotations

import numpy as np

from mmrag.embed.base import load_embedder
from mmrag.spaces.base import PageInput, QueryInput
from mmrag.spaces.document import DocumentSpace
from mmrag.types import Page, TextSource


def _page(n: int) -> Page:
    return Page(id=f"p{n}", document_id="d", number=n, width=10, height=10, image_hash="h", text="page text",
                words=[], text_source=TextSource.LAYER)


def test_pages_of_a_document_share_its_evidence_vectors() -> None:
    space = DocumentSpace(load_embedder("fake:8"))
    assert [s.name for s in space.specs()] == ["doc_text", "doc_bm25"] and space.document_level
    evidence = "2023 Q3 AAPL. Apple Inc. Form 10-Q. July 1, 2023"
    out = space.page_vectors([PageInput(_page(1), [], None, evidence), PageInput(_page(2), [], None, evidence),
                              PageInput(_page(3), [], None, "")])
    assert np.array_equal(out[0]["doc_text"], out[1]["doc_text"]) and out[0]["doc_text"].shape == (8,)
    assert out[0]["doc_bm25"] == out[1]["doc_bm25"] and len(out[0]["doc_bm25"].indices) >= 5
    assert out[2] == {}
    assert space.prefetch(QueryInput(text="Apple"), 10, None) is None  # no candidates of its own
    stage = space.document_stage(QueryInput(text="Apple Q3 2023"), 300, None)
    assert stage is not None and stage.fusion == "dbsf"
    assert [p.using for p in stage.prefetch] == ["doc_text", "doc_bm25"]
    assert space.document_stage(QueryInput(text=""), 300, None) is None
