"""``mmrag reindex-documents``: a corpus's document evidence re-derived from its stored page words, with
no parsing or page embedding: the catalog's facts, every page's payload and the document vectors are
rewritten, and they equal what a fresh ingestion of the same file gives (real filing pages, real MiniLM)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.doc_evidence import metadata_evidence
from mmrag.jobs.doc_reindex import reindex_documents
from mmrag.store.base import FilterSpec
from mmrag.types import SearchRequest

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not SHARED.exists():
    SHARED = Path("/work/shared/corpus")


def first_pages(source: Path, pages: int, out: Path) -> Path:
    with pymupdf.open(source) as src, pymupdf.open() as doc:
        doc.insert_pdf(src, from_page=0, to_page=pages - 1)
        doc.save(out)
    return out


@pytest.mark.timeout(600)
def test_reindex_rewrites_facts_payloads_and_document_vectors(pipeline, tmp_path: Path) -> None:
    pdf = first_pages(SHARED / "sec-10q" / "pdf" / "2023 Q1 MSFT.pdf", 4, tmp_path / "3f9a1c0e.pdf")
    pipeline.corpora.ensure_corpus("c")
    info = pipeline.ingest.path("c", pdf)
    fresh = DocumentFacts.from_dict(info.metadata["doc"])
    assert fresh.periods[0] == "FY2023-Q2" and fresh.entities[0] == "MICROSOFT CORPORATION"

    stale = replace(fresh, entities=["Emerging Growth Company"], periods=["2022-01-31"], form=None, tickers=[])
    metadata = {**info.metadata, "doc": stale.as_dict()}  # what older rules had read
    pipeline.catalog.documents.set_metadata("c", info.id, metadata)
    pipeline.store.set_payload("c", FilterSpec(match={"document_id": info.id}), {"meta": metadata})

    done = reindex_documents(pipeline.catalog, pipeline.store, pipeline.spaces, "c")
    assert (done.documents, done.changed, done.pages, done.traits) == (1, 1, 4, 0)  # traits: stored at ingestion
    facts = pipeline.catalog.documents.get("c", info.id).metadata["doc"]
    assert facts == fresh.as_dict()  # the stored words give what the PDF gave at ingestion
    points = pipeline.store.scroll("c", FilterSpec(match={"document_id": info.id}), with_vectors=["doc_text"])
    assert len(points) == 4 and all(p.payload["meta"]["doc"] == facts for p in points)
    space = pipeline.spaces["document"]
    expected = space.evidence_vectors([metadata_evidence({"doc": facts}, pdf.name)])[0]["doc_text"]
    for p in points:
        assert np.allclose(np.asarray(p.vectors["doc_text"]), expected, atol=5e-4)  # stored as float16
    hits = pipeline.search("c", SearchRequest(query="x", metadata={"doc.periods": "FY2023-Q2"}, top_k=4))
    assert len(hits.evidence) == 4  # the rewritten payload filters
    again = reindex_documents(pipeline.catalog, pipeline.store, pipeline.spaces, "c")
    assert (again.documents, again.changed, again.pages) == (1, 0, 0)  # nothing new to write
