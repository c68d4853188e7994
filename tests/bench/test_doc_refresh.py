"""bench/doc_refresh.py at a tiny size: copies of real-looking facts, both arms timed, the refreshed cache right."""

from __future__ import annotations

from pathlib import Path

from bench import doc_refresh
from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.doc_facts import DocumentFacts
from mmrag.retrieve.document_prior import CorpusDocuments, DocumentsCache
from mmrag.types import Document


def test_the_copies_are_distinct_companies_and_both_arms_are_measured(tmp_path: Path) -> None:
    source = Catalog(tmp_path / "data")
    source.corpora.create("filings", CorpusConfig(spaces=["bm25"]))
    for i, name in enumerate(["Apple Inc", "Northwind Traders Ltd"]):
        facts = DocumentFacts(entities=[name], form="10-Q", periods=["2023-Q2"], tickers=[f"T{i}"], date="2023-06-30")
        source.documents.add("filings", Document(id=f"{i:032x}", filename=f"{name.split()[0]}_2023Q2_10Q.pdf",
                                                 media_type="application/pdf", size_bytes=1, pages=[],
                                                 metadata={"doc": facts.as_dict()}))
    base = doc_refresh.base_metadata(tmp_path / "data", "filings")
    copies = [doc_refresh.copy_of(base, k) for k in range(6)]
    assert len({c.id for c in copies}) == 6
    assert len({c.metadata["doc"]["entities"][0] for c in copies}) == 6  # every copy its own company
    assert copies[4].filename != base[0][1] and "2023" not in str(copies[4].metadata["doc"]["periods"])

    values = doc_refresh.run(tmp_path / "data", "filings", documents=20, rounds=2)
    assert values["documents"] == 20
    for name in ("full_s", "incremental_s", "ratio"):
        assert values[name].value > 0  # type: ignore[attr-defined]

    catalog = Catalog(tmp_path / "c2")  # the refresh the bench times gives what a fresh read gives
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    cache = DocumentsCache(catalog)
    for k, copy in enumerate(copies):
        catalog.documents.add("c", copy)
        assert cache.get("c") == CorpusDocuments.of(catalog.documents.facts("c")), k
