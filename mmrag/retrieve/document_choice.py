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
from mmrag.store.base import FilterSpec, QueryNode, VectorStore, score_order

FIRST_DOCUMENTS = 32  # documents a vector's first selection query asks for (doubled while their pages fall short)


def choose_documents(store: VectorStore, catalog: Catalog, corpus: str, space: Space, query: QueryInput,
                     budget: int, flt: FilterSpec | None) -> dict[str, DocumentChoice]:
    """Document vector -> its best documents (by its score, then document id) taken whole until their pages
    reach ``budget`` (the one that reaches it included); a vector that scores no document is left out."""
    out: dict[str, DocumentChoice] = {}
    for using, node in space.document_selection(query, budget, flt):
        chosen, pages = best_documents(store, catalog, corpus, node, budget)
        if chosen:
            out[using] = DocumentChoice(tuple(chosen), pages)
    return out


def best_documents(store: VectorStore, catalog: Catalog, corpus: str, node: QueryNode,
                   budget: int) -> tuple[list[str], int]:
    """The best documents of ``node`` (a query over one page per document) until their pages reach ``budget``,
    and their pages. Asks for ``FIRST_DOCUMENTS`` documents (and every one tied with the last), twice as many
    while those fall short of the budget and more documents may exist: most searches need a few dozen
    documents, not every document's score (a query's cost grows with the documents it returns)."""
    limit = min(FIRST_DOCUMENTS, budget)
    while True:
        hits = located(catalog, corpus, query_past_ties(store, corpus, node, limit, payload=[]))
        hits.sort(key=lambda h: score_order(h.score, h.payload["document_id"]))
        counts = catalog.documents.page_counts(corpus, [h.payload["document_id"] for h in hits])
        chosen, pages = [], 0
        for hit in hits:
            if pages >= budget:
                break
            chosen.append(hit.payload["document_id"])
            pages += max(counts.get(hit.payload["document_id"], 1), 1)
        every = len(hits) < limit  # the engine had no more documents to give
        # the first ``limit`` and those tied with the last of them are the engine's best; beyond, its margin
        known = len(hits) if every else sum(score_order(h.score, "")[0] <= score_order(hits[limit - 1].score, "")[0]
                                            for h in hits)
        if every or (len(chosen) <= known and pages >= budget) or limit >= budget:
            return chosen, pages
        limit = min(2 * limit, budget)
