"""What a corpus's documents say about a query: entities named (as people write them) and the latest
document of each series, cached until the corpus's documents change (real catalog)."""

from __future__ import annotations

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.ingest.doc_facts import DocumentFacts
from mmrag.retrieve.documents import CorpusDocuments, DocumentsCache, entity_core
from mmrag.types import Document


def test_entity_core_is_the_name_people_write() -> None:
    assert entity_core("AMAZON.COM, INC") == "amazon"
    assert entity_core("Microsoft Corp.") == "microsoft"
    assert entity_core("Intel Corporation") == "intel"
    assert entity_core("Northwind Traders Ltd") == "northwind traders"
    assert entity_core("Acme Robotics GmbH") == "acme robotics"


def test_named_entities_match_whole_words_and_possessives() -> None:
    docs = CorpusDocuments.of([
        ("a", "a.pdf", DocumentFacts(entities=["Intel Corporation"], date="2023-09-30")),
        ("b", "b.pdf", DocumentFacts(entities=["INTEL CORPORATION"], date="2023-07-01")),
        ("c", "c.pdf", DocumentFacts(entities=["Northwind Traders Ltd"])),
        ("d", "d.pdf", DocumentFacts(entities=["Co"])),  # too short to stand for anything
    ])
    assert docs.named_entities("What was Intel's gross margin?") == ("Intel Corporation", "INTEL CORPORATION")
    assert docs.named_entities("northwind traders' contract") == ("Northwind Traders Ltd",)
    assert docs.named_entities("intelligence tests") == ()  # a word that starts like a name is not the name
    assert docs.named_entities("Northwind alone") == ()  # every word of the name
    assert docs.latest == ("a",)


def test_cache_follows_the_corpus_documents(tmp_path) -> None:
    catalog = Catalog(tmp_path)
    catalog.create_corpus("c", CorpusConfig(spaces=["bm25"]))
    cache = DocumentsCache(catalog)

    def add(doc_id: str, entity: str, date: str) -> None:
        facts = DocumentFacts(entities=[entity], labels=["Form 10-Q"], date=date)
        catalog.add_document("c", Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf",
                                           size_bytes=1, pages=[], metadata={"doc": facts.as_dict()}))

    add("q2", "Apple Inc", "2023-04-01")
    assert cache.get("c").latest == ()  # one document: no series to choose from
    add("q3", "Apple Inc", "2023-07-01")
    assert cache.get("c").latest == ("q3",)
    assert cache.get("c") is cache.get("c")  # unchanged corpus: cached
    catalog.delete_document("c", "q3")
    assert cache.get("c").latest == ()
