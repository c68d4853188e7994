"""Where a collection's original vectors live: mapped and read as searches touch them (Qdrant's ``on_disk``, the
embedded engine's ``Memory.Cold``), not loaded whole when a segment opens. Loaded whole, every appendable
segment brought its preallocated chunk files (32 MB each) into memory however few vectors they held: the soak's
server grew by 112 MB per corpus at its first vacuum (docs/benchmarks.md, "Soak")."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import numpy as np

from mmrag.store import CollectionSpec, PointRecord, QueryNode, SpaceSpec
from mmrag.store import edge_request as er
from mmrag.store import qdrant_request as rq
from mmrag.store.edge import EdgeStore

QUERY = QueryNode(limit=5, using="text", vector=np.full((1, 64), 0.1, dtype=np.float32))


def _resident_kb(path_part: str) -> tuple[int, int]:
    """(size, resident) in kB of this process's mappings of files whose path contains ``path_part``."""
    size = rss = 0
    current = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):  # a mapping's header: its address range, ..., its path
            current = path_part in line
        elif current and line.startswith("Size:"):
            size += int(line.split()[1])
        elif current and line.startswith("Rss:"):
            rss += int(line.split()[1])
    return size, rss


def test_every_dense_and_multi_vector_space_keeps_its_vectors_on_disk() -> None:
    for space in (SpaceSpec("text", "multivector", 8), SpaceSpec("doc_text", "dense", 8),
                  SpaceSpec("clip", "dense", 8, quantization="binary")):
        params = rq.vector_params(space)
        assert params.on_disk is True
        assert er.vector_params(params).memory is not None  # the engine's placement set, not its default


def test_a_segments_preallocated_vector_chunks_are_not_brought_into_memory(tmp_path) -> None:
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", CollectionSpec(spaces=(SpaceSpec("text", "multivector", 64),)))
    rng = np.random.default_rng(0)
    store.upsert("c", [PointRecord(str(uuid.UUID(int=i + 1)), {"text": rng.normal(size=(3, 64)).astype(np.float32)},
                                   {"page_id": f"p{i}"}) for i in range(20)])
    assert len(store.query("c", QUERY)) == 5
    store.close()
    reopened = EdgeStore(tmp_path / "edge")  # a segment opened as a restart opens it
    assert len(reopened.query("c", QUERY)) == 5
    size, resident = _resident_kb("vector_storage-text")
    assert size >= 32 * 1024, "the chunk files are not mapped: the test reads the wrong mappings"
    assert resident < size / 4, f"{resident} of {size} kB of the vector chunk files resident"
    reopened.close()
