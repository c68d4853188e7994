"""Where a collection's original vectors live: mapped and read as searches touch them (Qdrant's ``on_disk``, the
embedded engine's ``Memory.Cold``), not loaded whole when a segment opens. Loaded whole, every appendable
segment brought its preallocated chunk files (32 MB each) into memory however few vectors they held: the soak's
server grew by 112 MB per corpus at its first vacuum (docs/benchmarks.md, "Soak")."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import numpy as np

from mmrag.store import CollectionSpec, FilterSpec, PointRecord, QueryNode, SpaceSpec
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


def _written_kb(folder: Path) -> int:
    """kB actually written under ``folder`` (allocated blocks: the engine's chunk files are sparse)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file()) // 1024


def test_a_small_corpus_under_churn_keeps_its_segment_near_its_live_size(tmp_path) -> None:
    """Uploads and deletes of small documents (20 points each, two live at a time, an optimise after each, as
    a job ends): the segment is rebuilt without its deleted points long before 1,000 of them (Qdrant's
    default, which the soak's corpora reached only after ~45 minutes, then stepped up by a new segment)."""
    store = EdgeStore(tmp_path / "edge")
    store.create_collection("c", CollectionSpec(spaces=(SpaceSpec("dense", "dense", 256),)))
    rng = np.random.default_rng(0)
    for cycle in range(45):  # 900 points written, 40 live at the end
        store.upsert("c", [PointRecord(str(uuid.uuid4()), {"dense": rng.standard_normal(256).astype(np.float32)},
                                       {"document_id": f"d{cycle}"}) for _ in range(20)])
        if cycle >= 2:
            store.delete("c", FilterSpec(match={"document_id": f"d{cycle - 2}"}))
        store.optimize("c")
        if cycle == 0:
            first = _written_kb(tmp_path / "edge" / "c" / "segments")  # 20 points, and the indexes' own files
    grown = _written_kb(tmp_path / "edge" / "c" / "segments") - first
    assert store.count("c") == 40
    assert grown < 0.25 * 900  # 900 points of 1 kB written since: kept about the live 40 (1,000's default: 970 kB)
    store.close()
