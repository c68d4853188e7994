"""From store hits to evidence: ordering, merging near-duplicates, per-space explanations."""

from __future__ import annotations

from typing import Any

from mmrag.store.base import Hit, QueryNode, VectorStore, score_order
from mmrag.types import Evidence

TIE_MARGIN = 8  # extra results asked of the store beyond those kept, so a cut's ties are seen
PLAN_TIE_MARGIN = 128
"""The margin of the plan's own cut (the ranker's first stage, ids and scores only): a page repeated in a corpus
(boilerplate, a document uploaded again) ties with its copies in BM25, and a cut inside such a group asks the
whole plan again (as much as the first query). Returning 120 more ids costs ~1 ms at 5,000 pages; at 250,034
pages of 240 copies each it spares the second plan query of most searches (docs/retrieval.md, "Cost against
corpus size")."""
MAX_TIE_FETCH = 4096  # the most results one cut asks for while its tie runs on


def rank_key(score: float, page_id: str) -> tuple[float, str]:
    """The order of ranked pages: best first; equal scores (to 6 decimals) by page id, so both engines agree
    (the store's own order, :func:`mmrag.store.base.score_order`)."""
    return score_order(score, page_id)


def order_hits(hits: list[Hit], top_k: int) -> list[Hit]:
    """The best ``top_k`` of ``hits`` by :func:`rank_key`."""
    return sorted(hits, key=lambda h: rank_key(h.score, h.payload.get("page_id", h.id)))[:top_k]


def query_past_ties(store: VectorStore, corpus: str, node: QueryNode, keep: int, margin: int | None = None,
                    **options: Any) -> list[Hit]:
    """The store's results of ``node`` with every page tied with the ``keep``-th, so that which tied pages a cut
    keeps is decided by page id (:func:`order_hits`), never by the engine's internal order: asks for ``keep +
    margin`` (default ``TIE_MARGIN``); where the last result returned still ties the ``keep``-th, asks once more
    for every result scoring at least the tied score (to 6 decimals; up to ``MAX_TIE_FETCH``), so a tie of
    thousands (documents whose document vectors match a query alike) costs two queries, not one per doubling.
    Sets ``node.limit``."""
    node.limit = keep + (TIE_MARGIN if margin is None else margin)
    hits = store.query(corpus, node, **options)  # in score order, ties by id
    if len(hits) < node.limit or len(hits) <= keep or node.limit >= MAX_TIE_FETCH:
        return hits
    tied = round(hits[keep - 1].score, 6)
    if round(hits[-1].score, 6) < tied:
        return hits
    node.limit, node.score_threshold = MAX_TIE_FETCH, tied - 5e-7  # what rounds to the tied score, and above
    try:
        return store.query(corpus, node, **options)
    finally:
        node.score_threshold = None


def merge_duplicates(evidence: list[Evidence]) -> list[Evidence]:
    """One item per page: later copies of a page (e.g. reached through several spaces or
    plans) fold their per-space ranks and scores into the first, best-ranked one."""
    seen: dict[str, Evidence] = {}
    out: list[Evidence] = []
    for ev in evidence:
        first = seen.get(ev.page_id)
        if first is None:
            seen[ev.page_id] = ev
            out.append(ev)
            continue
        for name, rank in ev.ranks.items():
            first.ranks[name] = min(rank, first.ranks.get(name, rank))
        for name, score in ev.scores.items():
            first.scores[name] = max(score, first.scores.get(name, score))
    return out


def rank_table(hits: list[Hit]) -> dict[str, tuple[int, float]]:
    """page id -> (1-based rank, score) of one stage's results."""
    table: dict[str, tuple[int, float]] = {}
    for i, hit in enumerate(hits):
        table.setdefault(hit.payload["page_id"], (i + 1, hit.score))
    return table


def annotate(evidence: list[Evidence], stage: str, table: dict[str, tuple[int, float]]) -> list[Evidence]:
    """Evidence with ``stage``'s rank and score where the stage found the page (in place, returned)."""
    for ev in evidence:
        if ev.page_id in table:
            ev.ranks[stage], ev.scores[stage] = table[ev.page_id]
    return evidence


__all__ = ["PLAN_TIE_MARGIN", "TIE_MARGIN", "annotate", "merge_duplicates", "order_hits", "query_past_ties",
           "rank_table"]
