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
from dataclasses import dataclass, replace

from mmrag.catalog import Catalog
from mmrag.ingest.ids import page_of_point, point_id
from mmrag.retrieve.plan import usable
from mmrag.retrieve.rank_features import CandidatePage, PageTraits, page_traits
from mmrag.spaces.base import QueryInput, Space
from mmrag.spaces.page_traits import unpack_traits
from mmrag.store.base import FilterSpec, Hit, VectorStore


@dataclass(frozen=True, slots=True)
class CandidateDepth:
    """How far the candidate set reaches."""

    first_stage: int  # best pages of the fused first stage
    documents: int  # best documents (by their best first-stage page) whose every page is a candidate
    pages_per_document: int  # at most this many pages of each of those documents (the first ones)


class PageTraitsCache:
    """Each page's :class:`PageTraits`, read once and kept (a page's text and section never change under its id):
    the base traits as ingestion stored them (:mod:`mmrag.spaces.page_traits`), else (a page written before, or
    ``extended`` traits) computed from its stored text; the least recently used go beyond ``max_pages``.
    Thread-safe."""

    def __init__(self, catalog: Catalog, max_pages: int = 200_000) -> None:
        self.catalog, self.max_pages = catalog, max_pages
        self._traits: OrderedDict[tuple[str, str], PageTraits] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, corpus: str, page_ids: Sequence[str], extended: bool = False) -> dict[str, PageTraits]:
        """page id -> traits of each of ``page_ids`` (a page the catalog lacks: those of no text); ``extended``:
        with its labels, captions and terms (a page kept without them is read again)."""
        out: dict[str, PageTraits] = {}
        with self._lock:
            for pid in page_ids:
                found = self._traits.get((corpus, pid))
                if found is not None and (found.extended or not extended):
                    self._traits.move_to_end((corpus, pid))
                    out[pid] = found
        missing = [pid for pid in page_ids if pid not in out]
        if missing:
            new = {} if extended else self._unpacked(corpus, missing)
            rest = [pid for pid in missing if pid not in new]
            stored = self.catalog.pages.texts_and_sections(corpus, rest) if rest else {}
            new.update((pid, page_traits(*stored.get(pid, ("", [])), extended=extended)) for pid in rest)
            out.update(new)
            with self._lock:
                for pid, traits in new.items():
                    self._traits[(corpus, pid)] = traits
                while len(self._traits) > self.max_pages:
                    self._traits.popitem(last=False)
        return out

    def _unpacked(self, corpus: str, page_ids: list[str]) -> dict[str, PageTraits]:
        """The base traits ingestion stored of those of ``page_ids`` that have them (of this version)."""
        out: dict[str, PageTraits] = {}
        for pid, packed in self.catalog.pages.packed_traits(corpus, page_ids).items():
            base = unpack_traits(packed)
            if base is not None:
                out[pid] = PageTraits.of(base)
        return out


def located(catalog: Catalog, corpus: str, hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` of a query that read no payload, each given its page's ``page_id``, ``document_id`` and
    ``page`` from the catalog (a point the catalog does not have yet, mid-ingest, is left out)."""
    pages = {h.id: page_of_point(h.id) for h in hits}
    places = catalog.pages.places(corpus, list(pages.values()))
    return [replace(h, payload={"page_id": pid, "document_id": places[pid][0], "page": places[pid][1]})
            for h in hits if (pid := pages[h.id]) in places]


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
                      first: Sequence[Hit], fit: Mapping[str, float], depth: CandidateDepth,
                      extended: bool = False) -> list[CandidatePage]:
    """The candidates of a search (first-stage order, then the added pages by document and number).
    ``first``: the fused first stage's hits, best first, :func:`located`; ``fit``: document id -> fit (the
    document stage's prior); ``flt``: the request's filter, which every added page must meet too (a
    candidate is a page some scoring query returns); ``extended``: their traits with labels, captions and terms."""
    first = list(first[:depth.first_stage])
    docs = document_order(first)
    place: dict[str, tuple[str, int]] = {h.payload["page_id"]: (h.payload["document_id"], int(h.payload["page"]))
                                         for h in first}
    for doc_id in docs[:depth.documents]:
        for pid, number in catalog.pages.first_of_document(corpus, doc_id, depth.pages_per_document):
            place.setdefault(pid, (doc_id, number))
    page_ids = list(place)
    within = _within(flt, page_ids)
    returned: set[str] = {h.payload["page_id"] for h in first}
    scores: dict[str, dict[str, float]] = {pid: {} for pid in page_ids}
    doc_match: dict[str, float] = {}
    for name in names:
        space = spaces[name]
        node = space.document_stage(query, len(page_ids), within) if space.document_level else \
            space.prefetch(query, len(page_ids), within) if usable(space, query) else None
        if node is None:
            continue
        for hit in store.query(corpus, node, payload=[]):
            pid = page_of_point(hit.id)
            returned.add(pid)
            if space.document_level:
                doc_match.setdefault(place[pid][0], hit.score)
            else:
                scores[pid][name] = hit.score
    found = [pid for pid in page_ids if pid in returned]
    page = traits.get(corpus, found, extended)
    all_docs = list(dict.fromkeys(place[pid][0] for pid in found))
    counts = catalog.documents.page_counts(corpus, all_docs)
    doc_rank = {d: i for i, d in enumerate(docs)}
    first_rank = {h.payload["page_id"]: (i, h.score) for i, h in enumerate(first)}
    out = []
    for pid in found:
        doc, number = place[pid]
        rank, fused = first_rank.get(pid, (None, 0.0))
        out.append(CandidatePage(
            page_id=pid, document_id=doc, page=number, fused_rank=rank, fused=fused,
            scores=scores[pid], doc_match=doc_match.get(doc, 0.0), doc_fit=float(fit.get(doc, 0.0)),
            doc_rank=doc_rank.get(doc, len(docs)), doc_pages=counts.get(doc, 1), traits=page[pid],
        ))
    return out


def candidate_hit(candidate: CandidatePage, score: float) -> Hit:
    """A ranked candidate as a hit; its payload is where the page is (``page_id``, ``document_id``,
    ``page``) until ``Retriever.finish_hits`` reads the whole of it."""
    return Hit(id=point_id(candidate.page_id), score=score,
               payload={"page_id": candidate.page_id, "document_id": candidate.document_id, "page": candidate.page})
