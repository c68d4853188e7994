"""Vector stores: the embedded Qdrant engine (default) and qdrant-client (server or local mode)."""

from __future__ import annotations

from pathlib import Path

from mmrag.config import StoreConfig
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    PointRecord,
    QueryNode,
    SpaceSpec,
    SparseVec,
    VectorStore,
)


def open_store(config: StoreConfig, data_dir: Path) -> VectorStore:
    """A server when ``config.url`` is set, else the embedded engine under ``data_dir``."""
    if config.url:
        from mmrag.store.qdrant_client_store import QdrantClientStore

        return QdrantClientStore(url=config.url, api_key=config.api_key, timeout_s=config.timeout_s)
    if config.engine == "local":
        from mmrag.store.qdrant_client_store import QdrantClientStore

        return QdrantClientStore(path=str(data_dir / "qdrant-local"))
    from mmrag.store.edge import EdgeStore

    return EdgeStore(data_dir / "qdrant-edge")


__all__ = ["CollectionSpec", "FilterSpec", "Hit", "PointRecord", "QueryNode", "SpaceSpec", "SparseVec",
           "VectorStore", "open_store"]
