"""The learned ranker's candidates: the fused first stage's best pages plus every page of its best
documents, each scored by every space the request uses over exactly that set.

Once the document is known, its statement and table pages are cheap to score with features even where
no space brought them up against the prose about the same items (a 100-page report is 100 rows, not a
search). Each space scores the whole set in one Qdrant query filtered to the candidates' page ids, so
a page has each space's own score whether or not it made that space's top list.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.retrieve.plan import usable
from mmrag.retrieve.rank_features import CandidatePage, PageTraits, page_traits
from mmrag.spaces.base import QueryInput, Space
from mmrag.store.base import FilterSpec, Hit, VectorStore

SCORING_FIELDS = ["page_id", "document_id", "page", "section"]
"""The payload fields the candidates' scoring queries read (a page's full payload carries its document's
facts: converting it for every candidate of every space was most of the ranker's cost)."""


@dataclass(frozen=True, slots=True)
class CandidateDepth:
    """How far the candidate set reaches."""

    first_stage: int  # best pages of the fused first stage
    documents: int  # best documents (by their best first-stage page) whose every page is a candidate
    pages_per_document: int  # at most this many pages of each of those documents (the first ones)


class PageTraitsCache:
    """Each page's :class:`PageTraits`, read from its stored text once and kept (a page's text and section
    never change under its id); the least recently used go beyond ``max_pages``. Thread-safe."""

    def __init__(self, catalog: Catalog, max_pages: int = 200_000) -> None:
        self.catalog, self.max_pages = catalog, max_pages
        self._traits: OrderedDict[tuple[str, str], PageTraits] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, corpus: str, hits: Mapping[str, Hit]) -> dict[str, PageTraits]:
        """page id -> traits of every page in ``hits`` (page id -> a hit with its payload)."""
        out: dict[str, PageTraits] = {}
        with self._lock:
            for pid in hits:
                found = self._traits.get((corpus, pid))
                if found is not None:
                    self._traits.move_to_end((corpus, pid))
                    out[pid] = found
        missing = [pid for pid in hits if pid not in out]
        if missing:
            texts = self.catalog.pages.plain_texts(corpus, missing)
            new = {pid: page_traits(texts.get(pid, ""), tuple(hits[pid].payload.get("section") or ()))
                   for pid in missing}
            out.update(new)
            with self._lock:
                for pid, traits in new.items():
                    self._traits[(corpus, pid)] = traits
                while len(self._traits) > self.max_pages:
                    self._traits.popitem(last=False)
        return out


def document_order(hits: Sequence[Hit]) -> list[str]:
    """Document ids by their best page in ``hits`` (best first)."""
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(hit.payload["document_id"], None)
    return list(seen)


def _within(flt: FilterSpec | None, page_ids: list[str]) -> FilterSpec:
    out = FilterSpec(match=dict(flt.match) if flt else {}, ranges=dict(flt.ranges) if flt else {})
    out.match["page_id"] = page_ids
    return out


def gather_candidates(store: VectorStore, catalog: Catalog, traits: PageTraitsCache, corpus: str,
                      spaces: Mapping[str, Space], names: Sequence[str], query: QueryInput, flt: FilterSpec | None,
                      first: Sequence[Hit], fit: Mapping[str, float], depth: CandidateDepth
                      ) -> tuple[list[CandidatePage], dict[str, Hit]]:
    """The candidates of a search (first-stage order, then the added pages by document and number) and
    a hit per candidate page (score meaningless; the full payload for first-stage pages, the
    :data:`SCORING_FIELDS` for pages only the scoring queries brought: ``Retriever.finish_hits``).
    ``first``: the fused first stage's hits, best first; ``fit``: document id -> fit (the document
    stage's prior); ``flt``: the request's filter, which every added page must meet too."""
    first = list(first[:depth.first_stage])
    docs = document_order(first)
    ids: dict[str, None] = {h.payload["page_id"]: None for h in first}
    for doc_id in docs[:depth.documents]:
        for info in catalog.pages.of_document(corpus, doc_id)[:depth.pages_per_document]:
            ids.setdefault(info.id, None)
    page_ids = list(ids)
    within = _within(flt, page_ids)
    hits: dict[str, Hit] = {h.payload["page_id"]: h for h in first}
    scores: dict[str, dict[str, float]] = {pid: {} for pid in page_ids}
    doc_match: dict[str, float] = {}
    for name in names:
        space = spaces[name]
        node = space.document_stage(query, len(page_ids), within) if space.document_level else \
            space.prefetch(query, len(page_ids), within) if usable(space, query) else None
        if node is None:
            continue
        for hit in store.query(corpus, node, payload=SCORING_FIELDS):
            pid = hit.payload["page_id"]
            hits.setdefault(pid, hit)
            if space.document_level:
                doc_match.setdefault(hit.payload["document_id"], hit.score)
            else:
                scores.setdefault(pid, {})[name] = hit.score
    found = [pid for pid in page_ids if pid in hits]
    page = traits.get(corpus, {pid: hits[pid] for pid in found})
    all_docs = document_order([hits[pid] for pid in found])
    counts = catalog.documents.page_counts(corpus, all_docs)
    doc_rank = {d: i for i, d in enumerate(docs)}
    first_rank = {h.payload["page_id"]: (i, h.score) for i, h in enumerate(first)}
    out = []
    for pid in found:
        payload = hits[pid].payload
        doc = payload["document_id"]
        rank, fused = first_rank.get(pid, (None, 0.0))
        out.append(CandidatePage(
            page_id=pid, document_id=doc, page=int(payload.get("page", 1)), fused_rank=rank, fused=fused,
            scores=scores.get(pid, {}), doc_match=doc_match.get(doc, 0.0), doc_fit=float(fit.get(doc, 0.0)),
            doc_rank=doc_rank.get(doc, len(docs)), doc_pages=counts.get(doc, 1), traits=page[pid],
        ))
    return out, hits
