"""Score formulas (Qdrant's score boosting) on both engines: the first prefetch's score times a prior
made of the other prefetches' scores plus a term (boost) for each payload condition that holds,
compared with a numpy oracle; and a payload set on the points a filter matches."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from mmrag.store import CollectionSpec, FilterSpec, PointRecord, QueryNode, SpaceSpec
from mmrag.store.base import ScoreFormula
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore

N, DIM = 40, 8
SPEC = CollectionSpec(spaces=(SpaceSpec("page", "dense", DIM), SpaceSpec("doc", "dense", DIM)))


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


@pytest.fixture()
def stores(tmp_path):
    rng = np.random.default_rng(3)
    docs = _unit(rng.standard_normal((4, DIM))).astype(np.float32)
    points = [PointRecord(id=str(uuid.UUID(int=i + 1)),
                          vectors={"page": _unit(rng.standard_normal(DIM)).astype(np.float32), "doc": docs[i % 4]},
                          payload={"document_id": f"d{i % 4}", "doc": {"periods": [f"2023-Q{i % 4 + 1}", "2023"]}})
              for i in range(N)]
    made = {"edge": EdgeStore(tmp_path / "edge"), "client": QdrantClientStore(path=":memory:")}
    for store in made.values():
        store.create_collection("c", SPEC)
        store.upsert("c", points)
    yield made, points, rng
    for store in made.values():
        store.close()


def test_formula_is_a_prior_on_the_first_prefetch(stores) -> None:
    made, points, rng = stores
    q = _unit(rng.standard_normal(DIM)).astype(np.float32)
    page = QueryNode(limit=10, using="page", vector=q)
    doc = QueryNode(limit=40, using="doc", vector=q)
    boost = FilterSpec(match={"doc.periods": ["2023-Q3"]})
    also = FilterSpec(match={"document_id": ["d2", "d3"]})
    node = QueryNode(limit=40, prefetch=[page, doc], formula=ScoreFormula((0.5,), ((0.25, boost), (2.0, also))))
    page_score = np.array([float(p.vectors["page"] @ q) for p in points])
    top = set(np.argsort(-page_score)[:10].tolist())

    def expected(i: int) -> float:
        if i not in top:
            return 0.0  # not found by the first prefetch: nothing to multiply
        prior = 1 + 0.5 * float(points[i].vectors["doc"] @ q)
        prior += (0.25 if i % 4 == 2 else 0.0) + (2.0 if i % 4 in (2, 3) else 0.0)
        return page_score[i] * prior

    for name, store in made.items():
        hits = store.query("c", node)
        assert len(hits) == N, name  # the union of both prefetches
        scores = {h.id: h.score for h in hits}
        assert [scores[p.id] for p in points] == pytest.approx([expected(i) for i in range(N)], abs=1e-4), name


def test_formula_counts_a_point_missing_from_a_prior_as_zero(stores) -> None:
    made, points, rng = stores
    q = _unit(rng.standard_normal(DIM)).astype(np.float32)
    only_d1 = FilterSpec(match={"document_id": "d1"})
    node = QueryNode(limit=40, prefetch=[QueryNode(limit=40, using="page", vector=q),
                                         QueryNode(limit=40, using="doc", vector=q, filter=only_d1)],
                     formula=ScoreFormula((2.0,)))
    for name, store in made.items():
        scores = {h.id: h.score for h in store.query("c", node)}
        assert len(scores) == N, name
        for p in points:
            extra = 2.0 * float(p.vectors["doc"] @ q) if p.payload["document_id"] == "d1" else 0.0
            assert scores[p.id] == pytest.approx(float(p.vectors["page"] @ q) * (1 + extra), abs=1e-4), name


def test_set_payload_rewrites_the_keys_of_the_matching_points_only(stores) -> None:
    made, points, _ = stores
    for name, store in made.items():
        store.set_payload("c", FilterSpec(match={"document_id": "d1"}), {"doc": {"periods": ["FY2023"]}})
        hits = {h.id: h.payload for h in store.scroll("c", limit=100)}
        for p in points:
            if p.payload["document_id"] == "d1":
                assert hits[p.id]["doc"] == {"periods": ["FY2023"]} and hits[p.id]["document_id"] == "d1", name
            else:
                assert hits[p.id]["doc"] == p.payload["doc"], name
        assert store.query("c", QueryNode(limit=5, using="page", vector=points[1].vectors["page"],
                                          filter=FilterSpec(match={"doc.periods": "FY2023"})))[0].id == points[1].id
