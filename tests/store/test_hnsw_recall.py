"""``StoreConfig.hnsw_ef`` and ``full_scan_points`` on a real HNSW index: a multi-vector space (MaxSim) large
enough that the embedded engine indexes it (its segments past the indexing threshold, about 10 MB of vectors) and
shaped as bench/scale.py's corpus is (every page in near-duplicate copies), searched with the settings and checked
against the exhaustive answer (``QueryNode.exact``); both travel the one translator to both engines' requests."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from mmrag.config import StoreConfig
from mmrag.store import CollectionSpec, IndexSearch, PointRecord, QueryNode, SpaceSpec, SparseVec, open_store
from mmrag.store import edge_request as er
from mmrag.store import qdrant_request as rq
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore

DIM, CHUNKS, PAGES, COPIES, NOISE = 384, 3, 120, 20, 0.005  # 2,400 points of 3 x 384 float32: 11 MB of vectors
SPEC = CollectionSpec(spaces=(SpaceSpec("text", "multivector", DIM),))
K, QUERIES = 10, 20


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _exact(node: QueryNode) -> QueryNode:
    return QueryNode(limit=node.limit, using=node.using, vector=node.vector, exact=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """An optimised edge shard of ``PAGES`` pages in ``COPIES`` noisy copies each, and queries near pages."""
    rng = np.random.default_rng(3)
    pages = _unit(rng.standard_normal((PAGES, CHUNKS, DIM)))
    points = [PointRecord(id=str(uuid.UUID(int=p * COPIES + c + 1)),
                          vectors={"text": _unit(pages[p] + rng.normal(0, NOISE, pages[p].shape)).astype(np.float32)},
                          payload={"page": p})
              for p in range(PAGES) for c in range(COPIES)]
    root = tmp_path_factory.mktemp("data")
    store = EdgeStore(root / "qdrant-edge")
    store.create_collection("c", SPEC)
    for i in range(0, len(points), 500):
        store.upsert("c", points[i:i + 500])
    store.optimize("c")
    store.close()
    chosen = rng.choice(PAGES, QUERIES, replace=False)
    queries = [_unit(pages[p, 0] + rng.normal(0, 0.05, DIM))[None, :].astype(np.float32) for p in chosen]  # (1, DIM)
    return root, queries


def _recall(store: EdgeStore, queries: list[np.ndarray]) -> float:
    found = []
    for q in queries:
        node = QueryNode(limit=K, using="text", vector=q)
        wanted = {h.id for h in store.query("c", _exact(node))}
        found.append(len({h.id for h in store.query("c", node)} & wanted) / len(wanted))
    return float(np.mean(found))


def test_the_default_hnsw_ef_finds_the_exhaustive_top_10_where_hnsw_applies(corpus):
    root, queries = corpus
    store = open_store(StoreConfig(full_scan_points=0), root)  # the default hnsw_ef; HNSW at every size
    assert isinstance(store, EdgeStore)
    try:
        assert store._shard("c").info().indexed_vectors_count == PAGES * COPIES  # a graph, not a full scan
        assert _recall(store, queries) >= 0.99
    finally:
        store.close()


def test_the_setting_reaches_the_engine_a_narrow_walk_loses_the_exhaustive_answer(corpus):
    """The same index searched with ``hnsw_ef=10``: the walk keeps too few candidates among the copies."""
    root, queries = corpus
    store = open_store(StoreConfig(full_scan_points=0, hnsw_ef=10), root)
    try:
        assert _recall(store, queries) < 0.8
    finally:
        store.close()


def test_a_collection_within_full_scan_points_is_scanned_whatever_the_graph(corpus):
    root, queries = corpus
    store = open_store(StoreConfig(hnsw_ef=10), root)  # the default full_scan_points: far more than 2,400
    try:
        assert store.index.exact(PAGES * COPIES) and _recall(store, queries) == 1.0
    finally:
        store.close()


def test_hnsw_ef_and_the_full_scan_go_to_vector_stages_of_both_engines_requests_never_to_a_sparse_one():
    vector = np.ones((1, DIM), np.float32)
    node = QueryNode(limit=10, fusion="dbsf", prefetch=[
        QueryNode(limit=100, using="text", vector=vector),
        QueryNode(limit=100, using="text", vector=vector, exact=True),
        QueryNode(limit=100, using="bm25", vector=SparseVec([1, 2], [1.0, 1.0])),
    ])
    index = IndexSearch(hnsw_ef=321, full_scan_points=1000)
    text, exact, sparse = rq.prefetches(node, index, 1001) or []  # past full_scan_points: HNSW
    assert (text.params.hnsw_ef, exact.params.hnsw_ef, sparse.params.hnsw_ef) == (321, None, None)
    assert (text.params.exact, exact.params.exact, sparse.params.exact) == (None, True, None)
    assert rq.search_params(node, index, 1001).hnsw_ef is None  # a fusion scores no vector
    edge = er.prefetches(rq.prefetches(node, index, 1001)) or []
    assert edge[0].params.hnsw_ef == 321 and edge[2].params.hnsw_ef is None
    text, exact, sparse = rq.prefetches(node, index, 1000) or []  # within it: the vector stages scan
    assert (text.params.exact, exact.params.exact, sparse.params.exact) == (True, True, None)
    assert text.params.hnsw_ef is None
    assert rq.search_params(node.prefetch[0], IndexSearch(), 5).hnsw_ef is None  # None: the engine's own
    assert not IndexSearch().exact(5)  # 0 points to scan: never
    client = QdrantClientStore(path=":memory:", index=index)  # the server's code path takes both parameters
    client.create_collection("c", SPEC)
    client.upsert("c", [PointRecord(id=str(uuid.UUID(int=1)), vectors={"text": vector}, payload={})])
    assert [h.id for h in client.query("c", QueryNode(limit=1, using="text", vector=vector))] == [str(uuid.UUID(int=1))]
    assert client._points("c") == 1
    client.close()


@pytest.mark.parametrize(("field", "value"), [("hnsw_ef", 0), ("hnsw_ef", 10_001), ("full_scan_points", -1)])
def test_a_setting_out_of_bounds_is_refused_at_start_up(field, value):
    with pytest.raises(ValueError, match=field):
        StoreConfig(**{field: value})
