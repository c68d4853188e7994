"""The benchmark corpus as a real mmrag corpus: a pipeline whose ``colpali`` space is fed
precomputed multi-vectors (so the product's ColpaliSpace, plan builder and stores run as is)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmrag.config import CorpusConfig, Settings
from mmrag.embed.base import Embedder, Item, Kind
from mmrag.pipeline import Pipeline, build_pipeline
from mmrag.spaces.visual import page_multivectors
from mmrag.store.base import PointRecord
from mmrag.types import Modality

CORPUS = "bench"


class LookupEmbedder(Embedder):
    """Text -> a precomputed query multi-vector (the benchmark's queries); nothing else."""

    modalities = frozenset({Modality.TEXT})
    multivector = True

    def __init__(self, table: dict[str, np.ndarray], dim: int) -> None:
        self.table, self.dim, self.spec = table, dim, "bench-lookup:0"

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        return [self.table[str(i)] for i in items]


class ZeroText(Embedder):
    """The text space must exist in a pipeline; the benchmark corpus does not use it."""

    modalities = frozenset({Modality.TEXT})
    multivector = False
    dim = 8
    spec = "bench-zero:8"

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        return [np.ones(8, dtype=np.float32) / np.sqrt(8) for _ in items]


def query_table(queries: list[np.ndarray]) -> dict[str, np.ndarray]:
    return {f"q{i}": q for i, q in enumerate(queries)}


def settings_for(data_dir: Path) -> Settings:
    settings = Settings(data_dir=data_dir)
    settings.embed.clip_model = None
    settings.embed.colpali_model = None
    settings.retrieve.max_prefetch_limit = 10_000
    vlm = getattr(settings, "vlm", None)
    if vlm is not None:  # the server's answer service would try to load a VLM at start-up
        vlm.backend = "none"
    return settings


def open_pipeline(data_dir: Path, queries: list[np.ndarray]) -> Pipeline:
    embedders: dict[str, Embedder] = {"text": ZeroText(), "colpali": LookupEmbedder(query_table(queries),
                                                                                    queries[0].shape[1])}
    return build_pipeline(settings_for(data_dir), embedders=embedders)


def load_pages(pipeline: Pipeline, pages: list[np.ndarray], quantization: str = "none", batch: int = 250) -> None:
    """Create the corpus and upsert every page's vectors (as the indexer would), then optimise."""
    config = CorpusConfig(spaces=["colpali"], prefetch_quantization=quantization)  # type: ignore[arg-type]
    pipeline.corpora.create_corpus(CORPUS, config)
    for start in range(0, len(pages), batch):
        points = []
        for i in range(start, min(start + batch, len(pages))):
            page_id = f"{i:032x}"
            payload = {"document_id": f"doc{i // 100}", "filename": f"doc{i // 100}.pdf", "page": i % 100 + 1,
                       "page_id": page_id, "kind": "page", "meta": {}}
            points.append(PointRecord(str(uuid.UUID(page_id)), page_multivectors(pages[i], 1), payload))
        pipeline.store.upsert(CORPUS, points)
    shard = getattr(pipeline.store, "_shard", None)
    if shard is not None:  # the edge engine builds HNSW / quantised copies only when optimised
        shard(CORPUS).optimize()


def page_index(page_id: str) -> int:
    return int(page_id, 16)


def write_queries(path: Path, queries: list[np.ndarray]) -> None:
    path.write_text(json.dumps([q.tolist() for q in queries]))


def read_queries(path: Path) -> list[np.ndarray]:
    return [np.asarray(q, dtype=np.float32) for q in json.loads(path.read_text())]
