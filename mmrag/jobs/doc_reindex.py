"""Re-deriving a corpus's document evidence from what it already stores, when the rules improve.

Each document's facts (:mod:`mmrag.ingest.doc_evidence`) are read from its first pages' stored words
(the catalog's, the same words in the same order as the PDF's text layer at ingestion), without parsing
the file again or embedding its pages: the catalog row's ``metadata.doc``, every page's payload
``meta`` and, in a corpus with the ``document`` space, every page's two document vectors (``doc_text``,
``doc_bm25``; one embedding per document) are rewritten. ``mmrag reindex-documents CORPUS`` runs it.
It also stores the ranker's page traits (:mod:`mmrag.spaces.page_traits`) of every page that has none of the
current version (a page written before traits were stored, or before their rules changed).
What the file's own metadata gave (title, author, dates, subject) stays as ingestion read it; text
vectors embedded with the document's label (the corpus option ``chunk_context: ["document"]``) keep the
label they were embedded with.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.doc_evidence import FIRST_PAGES, metadata_evidence, refresh_facts
from mmrag.ingest.ids import point_id
from mmrag.spaces.base import Space
from mmrag.spaces.document import DocumentSpace
from mmrag.spaces.page_traits import pack_traits, text_traits, unpack_traits
from mmrag.store.base import FilterSpec, VectorStore, VectorValue

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reindex:
    """What a re-derivation did (logged; returned to the CLI)."""

    corpus: str
    documents: int  # documents whose facts were re-derived
    changed: int  # of those, documents whose facts changed
    pages: int  # page points whose payload (and document vectors) were rewritten
    seconds: float
    traits: int = 0  # pages whose ranker traits were stored


def reindex_documents(catalog: Catalog, store: VectorStore, spaces: dict[str, Space], corpus: str) -> Reindex:
    """Re-derive every document's facts of ``corpus`` from its stored pages and rewrite them in the
    catalog, the page payloads and (with the ``document`` space) the document vectors."""
    t0 = time.perf_counter()
    config = catalog.corpora.config(corpus)
    found = next((spaces[n].for_corpus(config) for n in config.spaces
                  if n in spaces and spaces[n].document_level), None)
    space = found if isinstance(found, DocumentSpace) else None
    documents = changed = pages = traits = 0
    for info in catalog.documents.listed(corpus, limit=1_000_000):
        stored = info.metadata.get("doc")
        before = DocumentFacts.from_dict(stored if isinstance(stored, dict) else None)
        page_list = catalog.pages.of_document(corpus, info.id)
        traits += store_traits(catalog, corpus, [p.id for p in page_list])
        first = catalog.pages.words(corpus, [p.id for p in page_list[:FIRST_PAGES]])
        words = [first.get(p.id, []) for p in page_list[:FIRST_PAGES]]
        facts = refresh_facts(DocumentFacts.from_dict(before.as_dict()), info.filename, words)
        documents += 1
        if facts.as_dict() == before.as_dict() and isinstance(stored, dict):
            continue
        changed += 1
        metadata = {**info.metadata, "doc": facts.as_dict()}
        catalog.documents.set_metadata(corpus, info.id, metadata)
        store.set_payload(corpus, FilterSpec(match={"document_id": info.id}), {"meta": metadata})
        if space is not None and page_list:
            vectors = space.evidence_vectors([metadata_evidence(metadata, info.filename)])[0]
            if vectors:
                updates: dict[str, dict[str, VectorValue]] = {point_id(p.id): vectors for p in page_list}
                store.update_vectors(corpus, updates)
        pages += len(page_list)
    result = Reindex(corpus, documents, changed, pages, time.perf_counter() - t0, traits)
    log.info("corpus %s: document evidence of %d documents re-derived (%d changed, %d pages), traits of %d pages "
             "stored, in %.2fs", corpus, documents, changed, pages, traits, result.seconds)
    return result


def store_traits(catalog: Catalog, corpus: str, page_ids: list[str]) -> int:
    """Store the traits of those of ``page_ids`` that have none of the current version, read from their stored
    text and section path (as ingestion computes them); returns how many."""
    have = catalog.pages.packed_traits(corpus, page_ids)
    todo = [pid for pid in page_ids if unpack_traits(have.get(pid)) is None]
    stored = catalog.pages.texts_and_sections(corpus, todo) if todo else {}
    if stored:
        catalog.pages.set_traits(corpus, {pid: pack_traits(text_traits(*ts)) for pid, ts in stored.items()})
    return len(stored)
