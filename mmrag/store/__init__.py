"""Vector stores: the embedded Qdrant engine (default) and qdrant-client (server or local mode)."""

from __future__ import annotations

from pathlib import Path

from mmrag.config import StoreConfig
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    IndexSearch,
    PointRecord,
    QueryNode,
    SpaceSpec,
    SparseVec,
    VectorStore,
)


def open_store(config: StoreConfig, data_dir: Path) -> VectorStore:
    """A server when ``config.url`` is set, else the embedded engine under ``data_dir``; either searches with
    ``config``'s HNSW parameters."""
    index = IndexSearch(hnsw_ef=config.hnsw_ef, full_scan_points=config.full_scan_points)
    if config.url:
        from mmrag.store.qdrant_client_store import QdrantClientStore

        return QdrantClientStore(url=config.url, api_key=config.api_key, timeout_s=config.timeout_s, index=index)
    if config.engine == "local":
        from mmrag.store.qdrant_client_store import QdrantClientStore

        return QdrantClientStore(path=str(data_dir / "qdrant-local"), index=index)
    from mmrag.store.edge import EdgeStore

    return EdgeStore(data_dir / "qdrant-edge", index=index)


__all__ = ["CollectionSpec", "FilterSpec", "Hit", "IndexSearch", "PointRecord", "QueryNode", "SpaceSpec",
           "SparseVec", "VectorStore", "open_store"]
