"""Updating one named vector of existing points (the BM25 re-weight) on both engines: the other
vectors and the payload stay as they were."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from mmrag.errors import NotFound
from mmrag.store import CollectionSpec, PointRecord, SpaceSpec, SparseVec
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore

SPEC = CollectionSpec(spaces=(SpaceSpec("text", "dense", 4), SpaceSpec("bm25", "sparse", idf=True)))


def _sparse(v) -> dict[int, float]:
    return dict(zip(v.indices, v.values, strict=True))


@pytest.mark.parametrize("engine", ["edge", "client"])
def test_update_vectors_replaces_only_the_named_vector(tmp_path, engine):
    store = EdgeStore(tmp_path / "edge") if engine == "edge" else QdrantClientStore(path=":memory:")
    store.create_collection("c", SPEC)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(3)]
    dense = [np.array([1.0, i, 0.0, 0.5], dtype=np.float32) for i in range(3)]
    store.upsert("c", [PointRecord(id=pid, vectors={"text": d, "bm25": SparseVec([1, 7], [0.5, 1.5])},
                                   payload={"page_id": f"p{i}", "meta": {"x": i}})
                       for i, (pid, d) in enumerate(zip(ids, dense, strict=True))])
    before = {h.id: h for h in store.scroll("c", with_vectors=["text", "bm25"])}

    store.update_vectors("c", {ids[0]: {"bm25": SparseVec([2, 9], [0.25, 2.0])}})

    after = {h.id: h for h in store.scroll("c", with_vectors=["text", "bm25"])}
    assert _sparse(after[ids[0]].vectors["bm25"]) == {2: 0.25, 9: 2.0}
    for pid in ids[1:]:
        assert _sparse(after[pid].vectors["bm25"]) == _sparse(before[pid].vectors["bm25"]) == {1: 0.5, 7: 1.5}
    for pid in ids:
        assert after[pid].payload == before[pid].payload
        assert after[pid].vectors["text"] == pytest.approx(before[pid].vectors["text"])
    with pytest.raises(NotFound):
        store.update_vectors("missing", {ids[0]: {"bm25": SparseVec([1], [1.0])}})
    store.close()
