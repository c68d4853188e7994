"""One arm of ``bench.ingest``: ingest a file set into a fresh data folder and print what it cost, as JSON.

Run as a script with ``PYTHONPATH`` naming the tree under test (this tree, or an export of the previous
commit), so the same measurement runs either code path. It uses only the API both have:
``Settings``, ``build_pipeline``, ``Pipeline.ingest.uploads``, the job's timings, the store's
``scroll`` and the data folder on disk; nothing from ``bench/``.

    PYTHONPATH=TREE python bench/ingest_arm.py SPEC.json   # {"files": [[name, path, first, last]], ...}

Prints one JSON line: pages, seconds (submit to the job's end), the job's timings (summed over
batches), text chunks (rows of the stored ``text`` multi-vectors), bytes of each part of the data folder.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks), as bench/storage.py counts them."""
    if path.is_file():
        return path.stat().st_blocks * 512
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _pdf_bytes(path: str, first: int, last: int) -> bytes:
    import pymupdf

    data = Path(path).read_bytes()
    if first == 1 and last <= 0:
        return data
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        doc.select(list(range(first - 1, min(last, doc.page_count))))
        return bytes(doc.tobytes(garbage=3, deflate=True))


def _sizes(data_dir: Path, corpus: str) -> dict[str, int]:
    folder = data_dir / "corpora" / corpus
    return {"data": _bytes(data_dir), "catalog": sum(_bytes(p) for p in data_dir.glob("catalog.sqlite3*")),
            "sources": _bytes(folder / "sources"), "page_files": _bytes(folder / "pages"),
            "vectors": sum(_bytes(p) for p in data_dir.iterdir() if p.is_dir() and p.name not in ("corpora", "spool"))}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from mmrag.config import Settings, merge_settings
    from mmrag.embed.base import EmbedderOptions, load_embedder
    from mmrag.jobs.writer import Upload
    from mmrag.pipeline import build_pipeline

    uploads = [Upload(name, _pdf_bytes(path, first, last), {}) for name, path, first, last in spec["files"]]
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-ingest-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        settings.embed.clip_model = settings.embed.colpali_model = None
        settings.vlm.backend = "none"
        settings = merge_settings(settings, spec.get("settings", {}))
        # the text model at the tree's precision setting (a tree before the setting: float32); the
        # int8 export is cached under ~/.cache/mmrag, so only the first round of an arm builds it (untimed)
        precision = getattr(settings.embed, "text_precision", None)
        options = EmbedderOptions(text_precision=precision) if precision else EmbedderOptions()
        minilm = load_embedder("st:sentence-transformers/all-MiniLM-L6-v2", options)
        minilm.embed_many(["warm up the model"] * 4)
        pipeline = build_pipeline(settings, embedders={"text": minilm})
        try:
            pipeline.corpora.create_corpus("c")  # the default spaces the embedders give: text, bm25, document
            t0 = time.perf_counter()
            job = pipeline.ingest.uploads("c", uploads)
            seconds = time.perf_counter() - t0
            assert job.state.value == "done" and job.pages_done == job.pages_total, job.summary()
            hits = pipeline.store.scroll("c", limit=100_000, with_vectors=["text"])
            chunks = sum(len(h.vectors["text"]) for h in hits if h.vectors and "text" in h.vectors)
            spaces = pipeline.catalog.corpora.config("c").spaces
        finally:
            pipeline.close()
        sizes = _sizes(settings.data_dir, "c")
    return {"pages": job.pages_done, "seconds": seconds, "timings": dict(job.timings), "chunks": chunks,
            "source_bytes": sum(len(u.data) for u in uploads), "spaces": spaces, "sizes": sizes,
            "load": os.getloadavg()[0]}


if __name__ == "__main__":
    print(json.dumps(run(json.loads(Path(sys.argv[1]).read_text()))))
