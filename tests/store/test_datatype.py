"""How a space's values are stored (``SpaceSpec.datatype``, a corpus's ``text_datatype``): float16 and Qdrant's
TurboQuant codes (turbo8, turbo4) through the one request builder, on both engines."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from mmrag.store import CollectionSpec, PointRecord, QueryNode, SpaceSpec
from mmrag.store.edge import EdgeStore
from mmrag.store.qdrant_client_store import QdrantClientStore

DIM, PAGES, CHUNKS = 128, 300, 4


def _pages(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(PAGES):
        v = rng.normal(size=(CHUNKS, DIM)).astype(np.float32)
        out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return out


def _fill(store, datatype: str, pages: list[np.ndarray]) -> None:
    store.create_collection("c", CollectionSpec(spaces=(SpaceSpec("text", "multivector", DIM, datatype=datatype),)))
    store.upsert("c", [PointRecord(str(uuid.UUID(int=i + 1)), {"text": v}, {"page_id": f"p{i}"})
                       for i, v in enumerate(pages)])


def _stored_bytes(root) -> int:
    """Bytes allocated on disk for the text space's values (its preallocated chunk files' used blocks)."""
    return sum(p.stat().st_blocks * 512 for p in root.glob("c/segments/*/vector_storage-text/*vectors/chunk_*"))


@pytest.mark.parametrize("datatype", ["float16", "turbo8", "turbo4"])
@pytest.mark.parametrize("engine", ["edge", "qdrant-client"])
def test_a_page_finds_itself_by_each_of_its_chunks_whatever_the_datatype(tmp_path, engine, datatype) -> None:
    store = EdgeStore(tmp_path / "edge") if engine == "edge" else QdrantClientStore(path=":memory:")
    pages = _pages()
    try:
        _fill(store, datatype, pages)
        for i in (0, 17, 299):
            for chunk in range(CHUNKS):
                hits = store.query("c", QueryNode(limit=1, using="text", vector=pages[i][chunk][None, :], exact=True),
                                   payload=["page_id"])
                assert hits[0].payload["page_id"] == f"p{i}"
    finally:
        store.close()


def test_turbo_codes_take_a_half_and_a_quarter_of_float16s_bytes(tmp_path) -> None:
    sizes = {}
    for datatype in ("float16", "turbo8", "turbo4"):
        store = EdgeStore(tmp_path / datatype)
        _fill(store, datatype, _pages())
        store.close()
        sizes[datatype] = _stored_bytes(tmp_path / datatype)
    assert sizes["float16"] >= PAGES * CHUNKS * DIM * 2
    assert sizes["turbo8"] <= 0.6 * sizes["float16"]
    assert sizes["turbo4"] <= 0.35 * sizes["float16"]
