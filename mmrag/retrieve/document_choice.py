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
from mmrag.retrieve.document_prior import CorpusDocuments
from mmrag.retrieve.evidence import query_past_ties
from mmrag.spaces.base import DocumentChoice, QueryInput, Space
from mmrag.store.base import FilterSpec, Hit, QueryNode, VectorStore, score_order

FIRST_DOCUMENTS = 32  # documents a vector's first selection query asks for (doubled while their pages fall short)


def choose_documents(store: VectorStore, catalog: Catalog, corpus: str, space: Space, query: QueryInput,
                     budget: int, flt: FilterSpec | None,
                     documents: CorpusDocuments | None = None) -> dict[str, DocumentChoice]:
    """Document vector -> its best documents (by its score, then document id) taken whole until their pages
    reach ``budget`` (the one that reaches it included); a vector that scores no document is left out.
    ``documents``: the corpus's documents as cached (where each hit's document and page count are read)."""
    out: dict[str, DocumentChoice] = {}
    for using, node in space.document_selection(query, budget, flt):
        chosen, pages = best_documents(store, catalog, corpus, node, budget, documents)
        if chosen:
            out[using] = DocumentChoice(tuple(chosen), pages)
    return out


def scored_documents(catalog: Catalog, corpus: str, hits: list[Hit], documents: CorpusDocuments | None,
                     number: int) -> tuple[list[tuple[float, str]], dict[str, int]]:
    """(score, document id) of each hit of a selection over page ``number`` of every document, best first
    (ties by document id), and those documents' page counts: from ``documents`` (no query) where it knows the
    point, from the catalog for the rest (a document written since ``documents`` was read; a point the catalog
    does not have yet, mid-ingest, is left out)."""
    known = documents.page_points(number) if documents is not None else {}
    scored, rest = [], []
    for hit in hits:
        doc = known.get(hit.id)
        if doc is None:
            rest.append(hit)
        else:
            scored.append((hit.score, doc))
    scored += [(h.score, h.payload["document_id"]) for h in (located(catalog, corpus, rest) if rest else [])]
    scored.sort(key=lambda sd: score_order(*sd))
    counts = {doc: n for _, doc in scored if documents is not None and (n := documents.pages.get(doc, 0)) > 0}
    missing = [doc for _, doc in scored if doc not in counts]
    counts.update(catalog.documents.page_counts(corpus, missing) if missing else {})
    return scored, counts


def best_documents(store: VectorStore, catalog: Catalog, corpus: str, node: QueryNode, budget: int,
                   documents: CorpusDocuments | None = None) -> tuple[list[str], int]:
    """The best documents of ``node`` (a query over one page per document) until their pages reach ``budget``,
    and their pages. Asks for ``FIRST_DOCUMENTS`` documents (and every one tied with the last), twice as many
    while those fall short of the budget and more documents may exist: most searches need a few dozen
    documents, not every document's score (a query's cost grows with the documents it returns)."""
    limit = min(FIRST_DOCUMENTS, budget)
    first = node.filter.ranges.get("page", (None, None))[0] if node.filter is not None else None
    number = int(first or 1)  # the page of each document the selection scores (document_selection)
    while True:
        hits = query_past_ties(store, corpus, node, limit, payload=[])
        scored, counts = scored_documents(catalog, corpus, hits, documents, number)
        chosen, pages = [], 0
        for _, doc in scored:
            if pages >= budget:
                break
            chosen.append(doc)
            pages += max(counts.get(doc, 1), 1)
        every = len(scored) < limit  # the engine had no more documents to give
        # the first ``limit`` and those tied with the last of them are the engine's best; beyond, its margin
        known = len(scored) if every else sum(score_order(s, "")[0] <= score_order(scored[limit - 1][0], "")[0]
                                              for s, _ in scored)
        if every or (len(chosen) <= known and pages >= budget) or limit >= budget:
            return chosen, pages
        limit = min(2 * limit, budget)
