"""``StoreConfig.hnsw_ef`` on a real HNSW index: a multi-vector space (MaxSim) large enough that the embedded
engine indexes it (its segments past the indexing threshold, about 10 MB of vectors) and shaped as bench/scale.py's
corpus is (every page in near-duplicate copies), searched with the setting and checked against the exhaustive
answer (``QueryNode.exact``); the setting travels the one translator to both engines' request models."""

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


def test_the_default_hnsw_ef_finds_the_exhaustive_top_10_on_an_indexed_multivector_space(corpus):
    root, queries = corpus
    store = open_store(StoreConfig(), root)  # the default setting, as the server opens its store
    assert isinstance(store, EdgeStore)
    try:
        assert store._shard("c").info().indexed_vectors_count == PAGES * COPIES  # HNSW applies: not a full scan
        assert _recall(store, queries) >= 0.99
    finally:
        store.close()


def test_the_setting_reaches_the_engine_a_narrow_walk_loses_the_exhaustive_answer(corpus):
    """The same index searched with ``hnsw_ef=10``: the walk keeps too few candidates among the copies."""
    root, queries = corpus
    store = open_store(StoreConfig(hnsw_ef=10), root)
    try:
        assert _recall(store, queries) < 0.8
    finally:
        store.close()


def test_hnsw_ef_goes_to_every_vector_stage_of_both_engines_requests_and_never_to_a_sparse_or_exact_one():
    vector = np.ones((1, DIM), np.float32)
    node = QueryNode(limit=10, fusion="dbsf", prefetch=[
        QueryNode(limit=100, using="text", vector=vector),
        QueryNode(limit=100, using="text", vector=vector, exact=True),
        QueryNode(limit=100, using="bm25", vector=SparseVec([1, 2], [1.0, 1.0])),
    ])
    index = IndexSearch(hnsw_ef=321)
    text, exact, sparse = rq.prefetches(node, index) or []
    assert (text.params.hnsw_ef, exact.params.hnsw_ef, sparse.params.hnsw_ef) == (321, None, None)
    assert exact.params.exact is True
    assert rq.search_params(node, index).hnsw_ef is None  # a fusion scores no vector
    edge = er.prefetches(rq.prefetches(node, index)) or []
    assert edge[0].params.hnsw_ef == 321 and edge[2].params.hnsw_ef is None
    assert rq.search_params(node.prefetch[0], IndexSearch()).hnsw_ef is None  # None: the engine's own
    client = QdrantClientStore(path=":memory:", index=index)  # the server's code path takes the parameter too
    client.create_collection("c", SPEC)
    client.upsert("c", [PointRecord(id=str(uuid.UUID(int=1)), vectors={"text": vector}, payload={})])
    assert [h.id for h in client.query("c", QueryNode(limit=1, using="text", vector=vector))] == [str(uuid.UUID(int=1))]
    client.close()


@pytest.mark.parametrize("value", [0, -5, 10_001])
def test_an_hnsw_ef_out_of_bounds_is_refused_at_start_up(value):
    with pytest.raises(ValueError, match="hnsw_ef"):
        StoreConfig(hnsw_ef=value)
