"""Size / quality of stored representations, simulated in numpy against exhaustive float32 MaxSim.

Bytes are the raw vector bytes a page costs in that representation (what an engine keeps
in RAM for scoring), without index overhead. Qdrant also keeps float originals on disk
when it quantises (for rescoring); those are listed separately in the docs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.retrieval_maths import (
    binary_centred,
    binary_pages,
    centre_stats,
    int4_pages,
    maxsim_all,
    mean_vectors,
    pack,
    pooled,
    recall_at_k,
    scalar_pages,
    top_k,
    two_bit_centred,
    two_bit_pages,
    two_stage,
)
from mmrag.embed.pooling import l2_normalise

DIM = 128
ROW = {"f32": DIM * 4, "f16": DIM * 2, "int4": DIM // 2, "2bit": DIM // 4, "bin": DIM // 8}


@dataclass(frozen=True, slots=True)
class SizeRow:
    name: str
    bytes_per_page: float
    ratio: float  # bytes / float32 full bytes
    recall: float  # Recall@10 vs exhaustive float32, mean over the queries
    recalls: tuple[float, ...] = ()  # per query, in the order given


def _exhaustive(pages: list[np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    packed = pack(pages, 0)
    return lambda q: maxsim_all(q, packed)


def _mean_prefetch(pages: list[np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    means = mean_vectors(pages)
    return lambda q: means @ l2_normalise(q.mean(axis=0))


def _mean_binary_prefetch(pages: list[np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    signs = np.where(mean_vectors(pages) > 0, 1.0, -1.0).astype(np.float32)
    return lambda q: signs @ q.mean(axis=0)


def size_quality(pages: list[np.ndarray], qs: list[np.ndarray], truth: list[np.ndarray],
                 quick: bool = False, candidates: int = 200) -> list[SizeRow]:
    """Every configuration's bytes per page and Recall@10, printed as a table and returned."""
    tokens = float(np.mean([len(p) for p in pages]))
    full_bytes = tokens * ROW["f32"]
    pool2, pool3 = pooled(pages, 2), pooled(pages, 3)
    t2 = float(np.mean([len(p) for p in pool2]))
    t3 = float(np.mean([len(p) for p in pool3]))
    mu, sd = centre_stats(pages)
    two_bit, four_bit = two_bit_centred(pages, mu, sd), int4_pages(pool2)
    mean_f, mean_b = _mean_prefetch(pages), _mean_binary_prefetch(pages)
    configs: list[tuple[str, float, Callable[[np.ndarray], np.ndarray]]] = [
        ("full float32 (exhaustive)", full_bytes, _exhaustive(pages)),
        ("pooled x2 float32", t2 * ROW["f32"], _exhaustive(pool2)),
        ("pooled x3 float32", t3 * ROW["f32"], _exhaustive(pool3)),
        ("int8 full (scalar, per-row scale)", tokens * (ROW["f32"] // 4 + 4), _exhaustive(scalar_pages(pages))),
        ("int4 full", tokens * ROW["int4"], _exhaustive(int4_pages(pages))),
        ("binary full (1 bit/dim)", tokens * ROW["bin"], _exhaustive(binary_pages(pages))),
        ("binary full, centred", tokens * ROW["bin"], _exhaustive(binary_centred(pages, mu, sd))),
        ("2-bit full (Lloyd-Max)", tokens * ROW["2bit"], _exhaustive(two_bit_pages(pages))),
        ("2-bit full, centred (Lloyd-Max)", tokens * ROW["2bit"], _exhaustive(two_bit)),
        ("2-bit pooled x2, centred", t2 * ROW["2bit"], _exhaustive(two_bit_centred(pool2, mu, sd))),
        ("int4 pooled x2", t2 * ROW["int4"], _exhaustive(four_bit)),
        (f"mean f32 prefetch {candidates} -> full f32", full_bytes + ROW["f32"],
         lambda q: _rank(two_stage(q, mean_f, pages, candidates), len(pages))),
        (f"mean binary prefetch {candidates} -> full f32", full_bytes + ROW["bin"],
         lambda q: _rank(two_stage(q, mean_b, pages, candidates), len(pages))),
        (f"mean binary prefetch {candidates} -> pooled x2 f32", t2 * ROW["f32"] + ROW["bin"],
         lambda q: _rank(two_stage(q, mean_b, pool2, candidates), len(pages))),
        (f"mean binary prefetch {candidates} -> 2-bit full centred", tokens * ROW["2bit"] + ROW["bin"],
         lambda q: _rank(two_stage(q, mean_b, two_bit, candidates), len(pages))),
    ]
    rows = []
    print(f"{'configuration':<48} {'bytes/page':>10} {'ratio':>7} {'Recall@10':>10}")
    for name, size, scorer in configs:
        per_query = tuple(recall_at_k(t, top_k(scorer(q), 10)) for q, t in zip(qs, truth, strict=True))
        recall = float(np.mean(per_query))
        row = SizeRow(name, size, size / full_bytes, recall, per_query)
        rows.append(row)
        print(f"{name:<48} {size:>10.0f} {row.ratio:>7.4f} {recall:>10.3f}", flush=True)
    return rows


def _rank(ids: np.ndarray, n: int) -> np.ndarray:
    """Scores that order ``ids`` first (best first), everything else after."""
    scores = np.full(n, -np.inf, dtype=np.float32)
    scores[ids] = -np.arange(len(ids), dtype=np.float32)
    return scores
