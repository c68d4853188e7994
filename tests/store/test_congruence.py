"""The same operations on both engines that run here (qdrant-edge and qdrant-client local mode),
compared with each other and with a numpy oracle (congruence tests, as in qdrant-client)."""

from __future__ import annotations

import shutil
import uuid

import numpy as np
import pytest

from mmrag.errors import InvalidInput, NotFound
from mmrag.store import CollectionSpec, FilterSpec, IndexSearch, PointRecord, QueryNode, SpaceSpec, SparseVec
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore

N, DIM, MV = 60, 16, 8
SPEC = CollectionSpec(spaces=(
    SpaceSpec("dense", "dense", DIM),
    SpaceSpec("mv", "multivector", MV, index=False),
    SpaceSpec("bm25", "sparse", idf=True),
))


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    points = []
    for i in range(N):
        terms = sorted(set(rng.integers(0, 40, size=6).tolist()))
        points.append(PointRecord(
            id=str(uuid.UUID(int=i + 1)),
            vectors={"dense": _unit(rng.standard_normal(DIM)).astype(np.float32),
                     "mv": _unit(rng.standard_normal((int(rng.integers(3, 9)), MV))).astype(np.float32),
                     "bm25": SparseVec(terms, [float(rng.uniform(0.5, 3.0)) for _ in terms])},
            payload={"document_id": f"d{i % 5}", "page": i, "kind": "page" if i % 3 else "image",
                     "page_id": f"p{i}"},
        ))
    return points


def _stores(tmp_path):
    return {"edge": EdgeStore(tmp_path / "edge"), "client": QdrantClientStore(path=":memory:")}


@pytest.fixture()
def stores(tmp_path, data):
    s = _stores(tmp_path)
    for store in s.values():
        store.create_collection("c", SPEC)
        store.upsert("c", data)
    yield s
    for store in s.values():
        store.close()


def _ids(hits):
    return [h.id for h in hits]


def assert_same_ranking(a, b):
    """Equal scores position by position; equal id sets within each group of tied scores
    (engines order ties differently), except the last group, which the limit may cut."""
    assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-4)
    groups: dict[float, tuple[set, set]] = {}
    for x, y in zip(a, b, strict=True):
        key = round(x.score, 5)
        groups.setdefault(key, (set(), set()))
        groups[key][0].add(x.id)
        groups[key][1].add(y.id)
    for key in list(groups)[:-1]:
        assert groups[key][0] == groups[key][1]


def test_dense_matches_numpy_and_each_other(stores, data):
    q = _unit(np.random.default_rng(1).standard_normal(DIM)).astype(np.float32)
    oracle = sorted(data, key=lambda p: -float(p.vectors["dense"] @ q))[:10]
    for store in stores.values():
        hits = store.query("c", QueryNode(limit=10, using="dense", vector=q))
        assert _ids(hits) == [p.id for p in oracle]
        assert hits[0].score == pytest.approx(float(oracle[0].vectors["dense"] @ q), abs=1e-4)


def test_a_score_threshold_keeps_every_result_at_or_above_it_on_both_engines(stores, data):
    """What a cut inside a tie asks for (:func:`mmrag.retrieve.evidence.query_past_ties`): every result
    scoring at least the threshold, whatever the limit leaves room for; on a plain and on a fused query."""
    q = _unit(np.random.default_rng(3).standard_normal(DIM)).astype(np.float32)
    scores = sorted((float(p.vectors["dense"] @ q) for p in data), reverse=True)
    threshold = (scores[11] + scores[12]) / 2  # between the 12th and 13th best
    fused = QueryNode(limit=100, fusion="rrf", prefetch=[QueryNode(limit=30, using="dense", vector=q)])
    for store in stores.values():
        hits = store.query("c", QueryNode(limit=100, using="dense", vector=q, score_threshold=threshold))
        assert [round(h.score, 4) for h in hits] == [round(s, 4) for s in scores[:12]]
        everything = store.query("c", fused)
        cut = everything[len(everything) // 2].score
        fused.score_threshold = cut
        assert _ids(store.query("c", fused)) == _ids([h for h in everything if h.score >= cut])
        fused.score_threshold = None


def test_multivector_maxsim_matches_numpy(stores, data):
    q = _unit(np.random.default_rng(2).standard_normal((3, MV))).astype(np.float32)
    scores = {p.id: float((q @ p.vectors["mv"].T).max(axis=1).sum()) for p in data}
    oracle = sorted(scores, key=lambda i: -scores[i])[:10]
    for store in stores.values():
        hits = store.query("c", QueryNode(limit=10, using="mv", vector=q))
        assert _ids(hits) == oracle
        assert [h.score for h in hits] == pytest.approx([scores[i] for i in oracle], abs=1e-3)


def test_a_payload_selection_returns_only_those_fields_or_none_on_both_engines(stores, data):
    q = _unit(np.random.default_rng(4).standard_normal(DIM)).astype(np.float32)
    by_id = {p.id: p.payload for p in data}
    for store in stores.values():
        full = store.query("c", QueryNode(limit=10, using="dense", vector=q))
        some = store.query("c", QueryNode(limit=10, using="dense", vector=q), payload=["page_id", "page"])
        assert _ids(some) == _ids(full) and [h.score for h in some] == [h.score for h in full]
        assert [h.payload for h in full] == [by_id[h.id] for h in full]
        assert [h.payload for h in some] == [{"page_id": by_id[h.id]["page_id"], "page": by_id[h.id]["page"]}
                                             for h in some]
        none = store.query("c", QueryNode(limit=10, using="dense", vector=q), payload=[])
        assert _ids(none) == _ids(full) and [h.score for h in none] == [h.score for h in full]
        assert [h.payload for h in none] == [{}] * len(full)


def test_sparse_idf_congruent(stores):
    q = SparseVec([1, 5, 9, 22], [1.0, 1.0, 1.0, 1.0])
    results = [store.query("c", QueryNode(limit=15, using="bm25", vector=q)) for store in stores.values()]
    assert _ids(results[0]) == _ids(results[1]) and results[0]
    assert [h.score for h in results[0]] == pytest.approx([h.score for h in results[1]], rel=1e-3)


def test_filters_congruent(stores, data):
    q = _unit(np.random.default_rng(3).standard_normal(DIM)).astype(np.float32)
    flt = FilterSpec(match={"document_id": ["d1", "d3"], "kind": "page"}, ranges={"page": (10, 50)})
    expected = {p.id for p in data if p.payload["document_id"] in ("d1", "d3") and p.payload["kind"] == "page"
                and 10 <= p.payload["page"] <= 50}
    for store in stores.values():
        hits = store.query("c", QueryNode(limit=100, using="dense", vector=q, filter=flt))
        assert set(_ids(hits)) == expected
        assert store.count("c", flt) == len(expected)


def test_rrf_fusion_and_rerank_congruent(stores):
    rng = np.random.default_rng(4)
    qd = _unit(rng.standard_normal(DIM)).astype(np.float32)
    qm = _unit(rng.standard_normal((2, MV))).astype(np.float32)
    qs = SparseVec([2, 3, 4, 30], [1.0, 0.7, 1.3, 0.9])

    def plan(weights):
        fused = QueryNode(limit=20, fusion="rrf", rrf_k=60, weights=weights, prefetch=[
            QueryNode(limit=30, using="dense", vector=qd), QueryNode(limit=30, using="bm25", vector=qs)])
        return fused, QueryNode(limit=5, using="mv", vector=qm, prefetch=[fused])

    for weights in (None, [3.0, 1.0]):
        fused, rerank = plan(weights)
        fused_hits = [s.query("c", fused) for s in stores.values()]
        assert_same_ranking(*fused_hits)
        reranked = [s.query("c", rerank) for s in stores.values()]
        assert_same_ranking(*reranked)
        assert set(_ids(reranked[0])) <= set(_ids(fused_hits[0]))
        assert [h.score for h in reranked[0]] == sorted((h.score for h in reranked[0]), reverse=True)
    unweighted, weighted = (stores["edge"].query("c", plan(w)[0]) for w in (None, [3.0, 1.0]))
    assert [h.score for h in unweighted] != pytest.approx([h.score for h in weighted])  # weights matter


def test_delete_by_filter_and_vectors_returned(stores):
    for store in stores.values():
        before = store.count("c")
        store.delete("c", FilterSpec(match={"document_id": "d2"}))
        assert store.count("c") == before - N // 5
        assert store.count("c", FilterSpec(match={"document_id": "d2"})) == 0
        hits = store.query("c", QueryNode(limit=3, using="dense", vector=np.ones(DIM, np.float32) / 4),
                           with_vectors=["mv"])
        assert np.asarray(hits[0].vectors["mv"]).shape[1] == MV
        with pytest.raises(ValueError):
            store.delete("c", FilterSpec())


def test_unknown_collection_is_not_found(stores):
    for store in stores.values():
        with pytest.raises(NotFound):
            store.count("nope")


def test_persistence_reopen(tmp_path, data):
    for make in (lambda: EdgeStore(tmp_path / "e"), lambda: QdrantClientStore(path=str(tmp_path / "l"))):
        store = make()
        store.create_collection("c", SPEC)
        store.upsert("c", data[:20])
        store.upsert("c", data[:20])  # upsert is idempotent
        store.close()
        store = make()
        assert store.has_collection("c") and store.count("c") == 20
        store.delete_collection("c")
        assert not store.has_collection("c")
        store.close()


def test_float16_multivectors_rank_like_float32_on_both_engines(tmp_path, data):
    """The text space stores its chunk vectors as float16: MaxSim scores within float16's rounding of the
    float32 oracle, and the same ranking on both engines."""
    spec = CollectionSpec(spaces=(SpaceSpec("mv", "multivector", MV, index=False, datatype="float16"),))
    q = _unit(np.random.default_rng(5).standard_normal((3, MV))).astype(np.float32)
    scores = {p.id: float((q @ p.vectors["mv"].T).max(axis=1).sum()) for p in data}
    oracle = sorted(scores, key=lambda i: -scores[i])[:10]
    found = []
    for store in _stores(tmp_path).values():
        try:
            store.create_collection("h", spec)
            store.upsert("h", [PointRecord(p.id, {"mv": p.vectors["mv"]}, p.payload) for p in data])
            hits = store.query("h", QueryNode(limit=10, using="mv", vector=q))
            assert [h.score for h in hits] == pytest.approx([scores[h.id] for h in hits], abs=3e-3)
            found.append(_ids(hits))
        finally:
            store.close()
    assert found[0] == found[1] and len(set(found[0][:5]) & set(oracle[:5])) >= 4


def test_edge_points_survive_a_reopen_without_a_write_ahead_log(tmp_path, data):
    """No WAL on the embedded engine (every update is flushed before it returns): what an upsert stored
    is there after the store is opened again, and the folder holds no log."""
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", SPEC)
    store.upsert("c", data[:20])
    store.upsert("c", data[20:])
    # no close(): what the next process finds after this one dies is what upsert flushed
    shutil.copytree(tmp_path / "edge", tmp_path / "edge2")
    again = EdgeStore(tmp_path / "edge2")
    try:
        assert again.count("c") == len(data)
        assert sum(p.stat().st_blocks for p in (tmp_path / "edge2" / "c").rglob("wal/*") if p.is_file()) == 0
    finally:
        again.close()
        store.close()


@pytest.mark.parametrize("key", ["meta.a b", "meta.a:b", 'meta.a"b', "meta."])
def test_a_filter_key_neither_engine_takes_is_invalid_input_naming_the_allowed_characters(stores, key):
    for store in stores.values():
        with pytest.raises(InvalidInput, match=r"a field name holds only letters, digits, '_' and '-'"):
            store.query("c", QueryNode(limit=3, using="dense", vector=np.ones(DIM, np.float32),
                                       filter=FilterSpec(match={key: 1})))
        assert store.count("c", FilterSpec(match={"meta.doc.a-b_1": 1, "meta.x[]": 1})) == 0  # these pass


def test_an_exact_plan_scans_every_point_on_both_engines(stores, data):
    """``QueryNode.exact`` reaches the engines' search params at every level (bench/scale.py's recall oracle)."""
    from mmrag.store import edge_request as er
    from mmrag.store import qdrant_request as rq

    node = QueryNode(limit=5, using="dense", vector=None, exact=True,
                     prefetch=[QueryNode(limit=20, using="dense", exact=True,
                                         vector=_unit(np.random.default_rng(5).standard_normal(DIM)).astype(np.float32))])
    node.vector = node.prefetch[0].vector
    engines = IndexSearch()
    assert rq.search_params(node, engines, N).exact is True and rq.prefetches(node, engines, N)[0].params.exact is True
    assert er.search_params(rq.search_params(node, engines, N)).exact is True
    assert er.search_params(rq.search_params(QueryNode(limit=5), engines, N)).exact is False
    oracle = sorted(data, key=lambda p: -float(p.vectors["dense"] @ node.vector))[:5]
    for store in stores.values():
        assert _ids(store.query("c", node)) == [p.id for p in oracle]
