"""Ordering, near-duplicate merging and explanations of evidence."""

from __future__ import annotations

from mmrag.retrieve.evidence import annotate, merge_duplicates, order_hits, rank_table
from mmrag.store.base import Hit
from mmrag.types import Evidence, EvidenceKind


def ev(page_id: str, score: float, **ranks: int) -> Evidence:
    return Evidence(kind=EvidenceKind.PAGE, corpus="c", document_id="d", filename="f.pdf", page_id=page_id,
                    page=1, score=score, ranks=dict(ranks), scores={k: float(v) for k, v in ranks.items()})


def hit(page_id: str, score: float) -> Hit:
    return Hit(id=page_id, score=score, payload={"page_id": page_id})


def test_ties_are_ordered_by_page_id_and_cut_at_top_k():
    hits = [hit("b", 0.5), hit("a", 0.5), hit("c", 0.9), hit("d", 0.1)]
    assert [h.id for h in order_hits(hits, 3)] == ["c", "a", "b"]


def test_merge_keeps_first_copy_and_folds_ranks():
    merged = merge_duplicates([ev("p1", 0.9, text=3), ev("p2", 0.8), ev("p1", 0.7, bm25=1, text=2)])
    assert [e.page_id for e in merged] == ["p1", "p2"]
    assert merged[0].score == 0.9 and merged[0].ranks == {"text": 2, "bm25": 1}


def test_annotate_with_a_stage_rank_table():
    table = rank_table([hit("p2", 3.0), hit("p1", 2.0), hit("p2", 1.0)])
    assert table == {"p2": (1, 3.0), "p1": (2, 2.0)}
    out = annotate([ev("p1", 1.0), ev("p9", 1.0)], "clip", table)
    assert out[0].ranks == {"clip": 2} and out[0].scores == {"clip": 2.0} and out[1].ranks == {}
