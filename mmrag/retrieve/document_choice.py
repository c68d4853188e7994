"""Which documents the document stage scores: the best whole documents by each document vector, chosen
before the search, so that no cut falls inside a document.

Every page of a document carries the same document vectors (:mod:`mmrag.spaces.document`), so a stage that
keeps the best N pages by them cuts through a group of equal scores, and which pages of the last document pass
is the engine's internal order (segments, threads): two searches, or two stores of the same files, disagreed
(issue 40). Here each vector scores one page per document, the documents are ordered by that score and then by
document id, and they are taken whole until their pages reach the budget (``document_candidates``); the plan's
document stage then scores every page of them (:meth:`mmrag.spaces.base.Space.chosen_documents_stage`).
"""

from __future__ import annotations

from mmrag.catalog import Catalog
from mmrag.retrieve.candidates import located
from mmrag.retrieve.evidence import query_past_ties
from mmrag.spaces.base import DocumentChoice, QueryInput, Space
from mmrag.store.base import FilterSpec, VectorStore, score_order


def choose_documents(store: VectorStore, catalog: Catalog, corpus: str, space: Space, query: QueryInput,
                     budget: int, flt: FilterSpec | None) -> dict[str, DocumentChoice]:
    """Document vector -> its best documents (by its score, then document id) taken whole until their pages
    reach ``budget`` (the one that reaches it included); a vector that scores no document is left out."""
    out: dict[str, DocumentChoice] = {}
    for using, node in space.document_selection(query, budget, flt):
        hits = located(catalog, corpus, query_past_ties(store, corpus, node, budget, payload=[]))
        best = dict.fromkeys(h.payload["document_id"] for h in sorted(
            hits, key=lambda h: score_order(h.score, h.payload["document_id"])))
        counts = catalog.documents.page_counts(corpus, list(best))
        chosen, pages = [], 0
        for doc in best:
            if pages >= budget:
                break
            chosen.append(doc)
            pages += max(counts.get(doc, 1), 1)
        if chosen:
            out[using] = DocumentChoice(tuple(chosen), pages)
    return out

