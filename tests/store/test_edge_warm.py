"""A shard just opened is warmed: each indexed vector scanned once and each indexed payload field matched once
(the engine maps its files afresh; searches faulted them in one by one), never a vector without an index."""

from __future__ import annotations

import numpy as np

from mmrag.store import CollectionSpec, PointRecord, SpaceSpec, edge
from mmrag.store.edge import EdgeStore

SPEC = CollectionSpec(spaces=(SpaceSpec("colpali", "multivector", 4, index=False), SpaceSpec("mean", "dense", 4),
                              SpaceSpec("bm25", "sparse", idf=True)),
                      keyword_indexes=("document_id",), integer_indexes=("page",))


class Recording:
    """The real shard, with the searches and counts asked of it written down."""

    def __init__(self, shard) -> None:
        self.shard, self.used, self.counted = shard, [], []

    def scroll(self, request):
        return self.shard.scroll(request)

    def info(self):
        return self.shard.info()

    def query(self, request):
        self.used.append(request.query)
        return self.shard.query(request)

    def count(self, request):
        self.counted.append(request.filter)
        return self.shard.count(request)


def test_warming_scans_the_indexed_vectors_and_matches_each_payload_index(tmp_path, monkeypatch):
    store = EdgeStore(tmp_path)
    store.create_collection("c", SPEC)
    store.upsert("c", [PointRecord(id=f"00000000-0000-0000-0000-00000000000{i}",
                                   vectors={"colpali": np.ones((3, 4), np.float32) * i,
                                            "mean": np.arange(4, dtype=np.float32) + i},
                                   payload={"document_id": f"d{i}", "page": i}) for i in (1, 2)])
    store.close()
    seen: list[Recording] = []
    real = edge._warm

    def warm(shard, folder) -> None:
        seen.append(Recording(shard))
        real(seen[-1], folder)

    monkeypatch.setattr(edge, "_warm", warm)
    store = EdgeStore(tmp_path)
    assert store.count("c") == 2 and len(seen) == 1  # opened (and warmed) at its first use, once
    store.count("c")
    assert len(seen) == 1
    assert len(seen[0].used) == 1 and "mean" in repr(seen[0].used[0])  # not the unindexed colpali
    assert len(seen[0].counted) == 2  # document_id and page
    store.close()
