"""An indexed space's HNSW parameters (``SpaceSpec.graph``) through the one request builder: the embedded
engine's shard is created with them, Qdrant's request carries them, and a space without them keeps the engine's."""

from __future__ import annotations

import json

from mmrag.store import CollectionSpec, SpaceSpec
from mmrag.store import qdrant_request as rq
from mmrag.store.edge import EdgeStore


def _hnsw(root, name: str) -> dict | None:
    return json.loads((root / name / "edge_config.json").read_text())["vectors"]["text"].get("hnsw_config")


def test_a_space_graph_reaches_the_shard_and_the_request(tmp_path) -> None:
    store = EdgeStore(tmp_path)
    try:
        store.create_collection("wide", CollectionSpec((SpaceSpec("text", "multivector", 8, graph=(32, 400)),)))
        store.create_collection("plain", CollectionSpec((SpaceSpec("text", "multivector", 8),)))
        store.create_collection("none", CollectionSpec((SpaceSpec("text", "multivector", 8, index=False),)))
    finally:
        store.close()
    wide, none = _hnsw(tmp_path, "wide"), _hnsw(tmp_path, "none")
    assert wide is not None and (wide["m"], wide["ef_construct"]) == (32, 400)
    assert _hnsw(tmp_path, "plain") is None  # the engine's own (16 / 100)
    assert none is not None and none["m"] == 0  # not indexed
    params = rq.vector_params(SpaceSpec("text", "dense", 8, graph=(32, 400))).hnsw_config
    assert params is not None and (params.m, params.ef_construct) == (32, 400)
    assert rq.vector_params(SpaceSpec("text", "dense", 8)).hnsw_config is None
