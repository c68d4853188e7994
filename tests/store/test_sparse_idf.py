"""BM25's IDF after a deletion, on both engines: counted over the points that exist, and the same before
and after a restart (the engine's own statistics keep a deleted point until its segment is rebuilt)."""

from __future__ import annotations

import math
import uuid

import pytest
import qdrant_edge as qe

from mmrag.store import CollectionSpec, FilterSpec, PointRecord, QueryNode, SpaceSpec, SparseVec
from mmrag.store import qdrant_request as rq
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore


@pytest.fixture(autouse=True)
def _room_to_reopen(monkeypatch):
    """Shards reopen whatever the free space of the disk the tests run on (its own test sets the guard)."""
    from mmrag.store import edge

    monkeypatch.setattr(edge, "REOPEN_FREE_BYTES", 0)


SPEC = CollectionSpec(spaces=(SpaceSpec("bm25", "sparse", idf=True),), keyword_indexes=("document_id",))
QUERY = SparseVec([1, 2, 3], [1.0, 1.0, 1.0])


def _points() -> list[PointRecord]:
    """40 pages of 4 documents: term 1 on every page, term 2 on even pages, term 3 on odd pages and
    with a weight growing with the page, so every page scores differently."""
    points = []
    for i in range(40):
        term = 2 if i % 2 == 0 else 3
        points.append(PointRecord(id=str(uuid.UUID(int=i + 1)),
                                  vectors={"bm25": SparseVec([1, term], [1.0, 1.0 + i / 40])},
                                  payload={"document_id": f"d{i % 4}", "page": i}))
    return points


def _expected(points: list[PointRecord]) -> dict[str, float]:
    """Qdrant's BM25 IDF, ln((N - n + 0.5) / (n + 0.5) + 1), over ``points``, times query and stored values."""
    df: dict[int, int] = {}
    for p in points:
        for t in p.vectors["bm25"].indices:  # type: ignore[union-attr]
            df[t] = df.get(t, 0) + 1
    n = len(points)
    idf = {t: math.log((n - c + 0.5) / (c + 0.5) + 1) for t, c in df.items()}
    return {p.id: sum(idf[t] * v for t, v in zip(p.vectors["bm25"].indices, p.vectors["bm25"].values,  # type: ignore[union-attr]
                                                  strict=True) if t in QUERY.indices) for p in points}


def _scores(store) -> dict[str, float]:
    return {h.id: h.score for h in store.query("c", QueryNode(limit=100, using="bm25", vector=QUERY))}


@pytest.mark.parametrize("engine", ["edge", "client"])
def test_idf_counts_the_live_points_after_a_delete_and_after_a_restart(tmp_path, engine):
    def open_store():
        return EdgeStore(tmp_path / "edge") if engine == "edge" else QdrantClientStore(path=str(tmp_path / "l"))

    points = _points()
    store = open_store()
    store.create_collection("c", SPEC)
    store.upsert("c", points)
    store.optimize("c")
    assert _scores(store) == pytest.approx(_expected(points), rel=1e-4)

    store.delete("c", FilterSpec(match={"document_id": "d1"}))  # 10 of the 20 pages with term 3
    live = [p for p in points if p.payload["document_id"] != "d1"]
    before_restart = _scores(store)
    assert before_restart == pytest.approx(_expected(live), rel=1e-4)
    store.close()

    store = open_store()
    after_restart = _scores(store)
    assert after_restart == pytest.approx(before_restart, rel=1e-5)
    assert sorted(after_restart, key=lambda k: (-after_restart[k], k)) == \
        sorted(before_restart, key=lambda k: (-before_restart[k], k))
    store.close()


def _indexing_edge(monkeypatch) -> None:
    """Shards whose optimise builds an optimised (immutable) segment of even 40 points, as a large corpus has."""
    from mmrag.store import edge

    real = edge.edge_config

    def config(spec):
        c = real(spec)
        return qe.EdgeConfig(vectors=c.vectors, sparse_vectors=c.sparse_vectors, wal_enabled=False,
                             optimizers=qe.EdgeOptimizersConfig(vacuum_min_vector_number=edge.VACUUM_MIN_VECTORS,
                                                                indexing_threshold=1))
    monkeypatch.setattr(edge, "edge_config", config)


@pytest.mark.parametrize("segment", ["appendable", "optimised"])
def test_edge_ranks_after_a_deletion_as_after_a_restart_without_the_live_count(tmp_path, monkeypatch, segment):
    """The live count costs every sparse query a filter check per posting (bench.bm25_idf_cost): the embedded
    engine sends none and reopens a shard after a deletion instead, so its own count is a restart's: the live
    points where they sit in the appendable segment, and the deleted ones still counted in an optimised segment
    until its vacuum (qdrant-edge 0.9 rebuilt this small one's count on opening too), before the restart as after
    it."""
    if segment == "optimised":
        _indexing_edge(monkeypatch)
    node = QueryNode(limit=5, using="bm25", vector=QUERY)
    assert rq.idf_params(node) is not None and rq.idf_params(node, live_idf=False) is None
    assert rq.idf_params(QueryNode(limit=5, using="text", vector=[0.5, 0.5])) is None
    sent: list[object] = []
    real_params = rq.search_params

    def spy(*args, **kwargs):
        params = real_params(*args, **kwargs)
        sent.append(params.idf)
        return params

    monkeypatch.setattr(rq, "search_params", spy)
    points = _points()
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", SPEC)
    store.upsert("c", points)
    store.optimize("c")
    assert _scores(store) == pytest.approx(_expected(points), rel=1e-4) and store.reopened == 0
    store.delete("c", FilterSpec(match={"document_id": "d1"}))
    before_restart = _scores(store)
    assert store.reopened == 1 and sent and not any(sent)  # reopened once; no sparse query carried the live count
    _scores(store)
    assert store.reopened == 1
    live = [p for p in points if p.payload["document_id"] != "d1"]
    assert before_restart.keys() == {p.id for p in live}
    if segment == "appendable":  # an optimised segment's count is the engine's business until its vacuum
        assert before_restart == pytest.approx(_expected(live), rel=1e-4)
    store.close()
    store = EdgeStore(tmp_path / "edge")
    assert _scores(store) == pytest.approx(before_restart, rel=1e-6)
    store.close()


@pytest.mark.parametrize("rewrite", ["update_vectors", "upsert"])
def test_edge_idf_after_vectors_are_rewritten_counts_each_point_once(tmp_path, rewrite):
    """A BM25 re-weight rewrites vectors (``update_vectors``) and a batch redone after a crash upserts its points
    again: the engine keeps the old versions in its posting lists until a segment is rebuilt, so its own IDF
    counted them, and a search ranked otherwise before and after a restart (the kill harness's Celery case,
    a write killed in a corpus's first job). A rewrite reopens the shard as a deletion does."""
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", SPEC)
    points = _points()
    store.upsert("c", points)
    if rewrite == "update_vectors":
        store.update_vectors("c", {p.id: {"bm25": p.vectors["bm25"]} for p in points[:10]})
    else:
        store.upsert("c", points[:10])
    assert _scores(store) == pytest.approx(_expected(points), rel=1e-4) and store.reopened == 1
    store.close()


def test_searches_in_threads_meanwhile_deletions_reopen_the_shard(tmp_path):
    """Reopening waits for the searches in flight and holds new ones back: none fails or sees a closed shard."""
    import threading

    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", SPEC)
    store.upsert("c", _points())
    errors: list[BaseException] = []
    done = threading.Event()
    found: list[int] = []

    def search() -> None:
        try:
            while not done.is_set():
                found.append(len(_scores(store)))
                store.count("c")
        except BaseException as exc:  # the test's finding
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for t in threads:
        t.start()
    for doc in ("d0", "d1", "d2"):
        store.delete("c", FilterSpec(match={"document_id": doc}))
        _scores(store)
    done.set()
    for t in threads:
        t.join(timeout=30)
    assert not errors and found and store.reopened == 3
    assert set(found) <= {40, 30, 20, 10} and _scores(store).keys() == {p.id for p in _points()[3::4]}
    store.close()


def test_with_no_room_to_reopen_a_shard_its_idf_counts_the_live_points_until_there_is(tmp_path, monkeypatch):
    """Opening a shard maps new files, and the engine faults on them when the disk is full (the process ends):
    with less than ``REOPEN_FREE_BYTES`` free a deletion leaves the shard open, and its sparse queries count over
    the live points (exact, as before the reopening existed) until a later call finds room and reopens it."""
    from mmrag.store import edge

    room = [0]
    monkeypatch.setattr(edge, "REOPEN_FREE_BYTES", 1 << 20)
    monkeypatch.setattr(edge, "free_bytes", lambda path: room[0])
    points = _points()
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", SPEC)
    store.upsert("c", points)
    store.delete("c", FilterSpec(match={"document_id": "d1"}))
    live = [p for p in points if p.payload["document_id"] != "d1"]
    assert _scores(store) == pytest.approx(_expected(live), rel=1e-4) and store.reopened == 0
    room[0] = edge.REOPEN_FREE_BYTES
    assert _scores(store) == pytest.approx(_expected(live), rel=1e-4) and store.reopened == 1
    store.close()
