"""The qdrant-client backend: a Qdrant server (``url``) or qdrant-client's local mode
(``path`` / ``:memory:``, pure numpy: used in tests as the stand-in for the server code path).

Lifecycle: one client per process; collections are named ``mmrag_<corpus>``. Plans are translated to
Qdrant's request models by ``store/qdrant_request.py`` and sent as they are.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from qdrant_client import QdrantClient, models

from mmrag.errors import NotFound, Unavailable
from mmrag.store import qdrant_request as rq
from mmrag.store.base import (
    CollectionSpec,
    FilterSpec,
    Hit,
    IndexSearch,
    PointRecord,
    QueryNode,
    VectorStore,
    VectorValue,
    in_score_order,
)

PREFIX = "mmrag_"
SIZE_TTL_S = 60.0  # how long a collection's size read from the server is taken as current


def _vectors(named: dict[str, VectorValue]) -> dict[str, Any]:
    return {k: rq.vector(v) for k, v in named.items()}


class QdrantClientStore(VectorStore):
    def __init__(self, *, url: str | None = None, path: str | None = None, api_key: str | None = None,
                 timeout_s: float = 30.0, index: IndexSearch = IndexSearch()) -> None:
        self.index = index
        try:
            if url:
                self.client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout_s))
            else:
                self.client = QdrantClient(path=path) if path and path != ":memory:" else QdrantClient(":memory:")
        except Exception as exc:
            raise Unavailable(f"cannot open Qdrant at {url or path}: {exc}") from exc
        self._lock = threading.RLock()  # local mode is not thread-safe
        self._sizes: dict[str, tuple[int, float]] = {}  # collection -> (points, when read)

    @staticmethod
    def _name(name: str) -> str:
        return PREFIX + name

    def _require(self, name: str) -> str:
        if not self.has_collection(name):
            raise NotFound(f"no vector collection for corpus {name!r}")
        return self._name(name)

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        with self._lock:
            if self.has_collection(name):
                return
            self.client.create_collection(
                self._name(name),
                vectors_config={s.name: rq.vector_params(s) for s in spec.spaces if s.kind != "sparse"},
                sparse_vectors_config={s.name: rq.sparse_params(s) for s in spec.spaces if s.kind == "sparse"},
            )
            for key in spec.keyword_indexes:
                self.client.create_payload_index(self._name(name), key, models.PayloadSchemaType.KEYWORD)
            for key in spec.integer_indexes:
                self.client.create_payload_index(self._name(name), key, models.PayloadSchemaType.INTEGER)

    def delete_collection(self, name: str) -> None:
        with self._lock:
            if self.has_collection(name):
                self.client.delete_collection(self._name(name))
            self._sizes.pop(name, None)

    def has_collection(self, name: str) -> bool:
        with self._lock:
            return bool(self.client.collection_exists(self._name(name)))

    def upsert(self, name: str, points: list[PointRecord]) -> None:
        if not points:
            return
        structs = [models.PointStruct(id=p.id, vector=_vectors(p.vectors), payload=p.payload) for p in points]
        with self._lock:
            self.client.upsert(self._require(name), points=structs, wait=True)
            self._sizes.pop(name, None)

    def delete(self, name: str, flt: FilterSpec) -> None:
        f = rq.to_filter(flt)
        if f is None:
            raise ValueError("refusing to delete with an empty filter")
        with self._lock:
            self.client.delete(self._require(name), points_selector=models.FilterSelector(filter=f), wait=True)
            self._sizes.pop(name, None)

    def update_vectors(self, name: str, vectors: dict[str, dict[str, VectorValue]]) -> None:
        if not vectors:
            return
        points = [models.PointVectors(id=pid, vector=_vectors(named))
                  for pid, named in vectors.items()]
        with self._lock:
            self.client.update_vectors(self._require(name), points=points, wait=True)

    def set_payload(self, name: str, flt: FilterSpec, payload: dict[str, Any]) -> None:
        condition = rq.to_filter(flt)
        if condition is None:
            raise ValueError("set_payload needs a filter")
        with self._lock:
            self.client.set_payload(self._require(name), payload=payload, points=condition, wait=True)

    def query(self, name: str, node: QueryNode, *, with_vectors: list[str] | None = None,
              payload: list[str] | None = None) -> list[Hit]:
        with self._lock:
            points = self._points(name)
            response = self.client.query_points(
                self._require(name), prefetch=rq.prefetches(node, self.index, points), query=rq.query(node),
                using=node.using, query_filter=rq.to_filter(node.filter), limit=node.limit,
                score_threshold=node.score_threshold,
                with_payload=rq.with_payload(payload),
                with_vectors=with_vectors or False, search_params=rq.search_params(node, self.index, points),
            )
        return in_score_order([rq.to_hit(p) for p in response.points])

    def _points(self, name: str) -> int:
        """The collection's approximate size, read at most every ``SIZE_TTL_S`` (other writers of a server
        change it; it only chooses between a full scan and HNSW, ``IndexSearch.exact``), and only when a
        full scan is configured at all."""
        if self.index.full_scan_points <= 0:
            return 0
        now = time.monotonic()
        seen = self._sizes.get(name)
        if seen is None or now - seen[1] > SIZE_TTL_S:
            seen = (int(self.client.count(self._require(name), exact=False).count), now)
            self._sizes[name] = seen
        return seen[0]

    def count(self, name: str, flt: FilterSpec | None = None) -> int:
        with self._lock:
            return int(self.client.count(self._require(name), count_filter=rq.to_filter(flt), exact=True).count)

    def scroll(self, name: str, flt: FilterSpec | None = None, limit: int = 10_000,
               with_vectors: list[str] | None = None) -> list[Hit]:
        with self._lock:
            records, _ = self.client.scroll(self._require(name), scroll_filter=rq.to_filter(flt), limit=limit,
                                            with_payload=True, with_vectors=with_vectors or False)
        return [rq.to_hit(r) for r in records]

    def close(self) -> None:
        with self._lock:
            self.client.close()
