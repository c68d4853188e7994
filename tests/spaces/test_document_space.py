"""The document space: every page of a document carries the same evidence vectors; no evidence, none."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from mmrag.config import CorpusConfig
from mmrag.embed.base import load_embedder
from mmrag.spaces.base import PageInput, QueryInput
from mmrag.spaces.document import DocumentSpace
from mmrag.store import CollectionSpec, PointRecord
from mmrag.store.base import FilterSpec
from mmrag.store.edge import EdgeStore
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
    # the choice of documents: each vector over one page per document (the first page a filter allows)
    flt = FilterSpec(match={"document_id": ["d1", "d2"]}, ranges={"page": (3.0, 9.0)})
    selection = space.document_selection(QueryInput(text="Apple Q3 2023"), 40, flt)
    assert [(u, n.limit, n.exact, n.filter.ranges, n.filter.match) for u, n in selection] == [
        (u, 40, True, {"page": (3.0, 3.0)}, {"document_id": ["d1", "d2"]}) for u in ("doc_text", "doc_bm25")]
    assert flt.ranges == {"page": (3.0, 9.0)}  # the request's filter is left as it was
    assert space.document_selection(QueryInput(text="Apple"), 40, None)[0][1].filter.ranges == {"page": (1.0, 1.0)}
    assert space.document_selection(QueryInput(text=""), 40, None) == []


def _stored_doc_text_bytes(root, config: CorpusConfig, n: int = 300) -> tuple[int, list[float]]:
    """Bytes the engine allocates for ``n`` pages' ``doc_text`` in a corpus of ``config``, and one read back."""
    space = DocumentSpace(load_embedder("fake:256")).for_corpus(config)
    store = EdgeStore(root)
    store.create_collection("c", CollectionSpec(spaces=tuple(space.specs())))
    vectors = space.page_vectors([PageInput(_page(i), [], None, f"Document {i} evidence Apple") for i in range(n)])
    store.upsert("c", [PointRecord(id=str(uuid.UUID(int=i + 1)), vectors=v, payload={"page_id": f"p{i}"})
                       for i, v in enumerate(vectors)])
    back = store.scroll("c", with_vectors=["doc_text"])
    first = next(h for h in back if h.id == str(uuid.UUID(int=1))).vectors["doc_text"]
    store.close()
    folder = next(root.glob("c/segments/*/vector_storage-doc_text"))
    assert np.asarray(first) == pytest.approx(np.asarray(vectors[0]["doc_text"]), abs=2e-3)
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()), first


def test_doc_text_is_stored_as_the_corpus_text_datatype(tmp_path) -> None:
    space = DocumentSpace(load_embedder("fake:8"))
    assert space.specs()[0].datatype == "float16" and space.for_corpus(CorpusConfig()) is space
    assert space.for_corpus(CorpusConfig(text_datatype="float32")).specs()[0].datatype == "float32"
    half, _ = _stored_doc_text_bytes(tmp_path / "f16", CorpusConfig())
    full, _ = _stored_doc_text_bytes(tmp_path / "f32", CorpusConfig(text_datatype="float32"))
    assert full - half >= 300 * 256 * 2 * 0.9  # two bytes a value fewer
