"""Pure numpy maths of the retrieval benchmark: exhaustive MaxSim, two-stage simulation,
representations (pooled, binary, scalar) and their bytes, Recall@k.

A corpus is packed once as ``flat`` ``(total_tokens, dim)`` + ``starts`` ``(n_pages,)`` so that
exhaustive MaxSim is one matmul and one segmented max (``np.maximum.reduceat``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mmrag.embed.pooling import binary_quantise, hierarchical_pool, l2_normalise


@dataclass(frozen=True, slots=True)
class Packed:
    flat: np.ndarray  # (total_tokens, dim) float32
    starts: np.ndarray  # (n_pages,) int64: first row of each page
    bytes_per_page: float  # stored bytes of this representation, mean over pages

    @property
    def n_pages(self) -> int:
        return len(self.starts)


def pack(pages: list[np.ndarray], bytes_per_row: float) -> Packed:
    lengths = np.array([len(p) for p in pages])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return Packed(np.ascontiguousarray(np.concatenate(pages), dtype=np.float32), starts,
                  float(lengths.mean() * bytes_per_row))


def maxsim_all(query: np.ndarray, packed: Packed) -> np.ndarray:
    """``(n_pages,)`` MaxSim of one query ``(n_q, dim)`` against every page."""
    sims = packed.flat @ query.T  # (total_tokens, n_q)
    return np.maximum.reduceat(sims, packed.starts, axis=0).sum(axis=1)  # (n_pages, n_q) -> (n_pages,)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first (ties by lower index)."""
    k = min(k, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((part, -scores[part]))]


def maxsim_subset(query: np.ndarray, pages: list[np.ndarray], ids: np.ndarray) -> np.ndarray:
    return np.array([float((pages[i] @ query.T).max(axis=0).sum()) for i in ids], dtype=np.float32)


def recall_at_k(truth: np.ndarray, got: np.ndarray, k: int = 10) -> float:
    """|top-k truth ∩ top-k got| / k."""
    return len(set(truth[:k].tolist()) & set(got[:k].tolist())) / k


def two_stage(query: np.ndarray, prefetch: Callable[[np.ndarray], np.ndarray], rerank_pages: list[np.ndarray],
              candidates: int, k: int = 10) -> np.ndarray:
    """Top-k after reranking the prefetch's best ``candidates`` pages by MaxSim on ``rerank_pages``."""
    ids = top_k(prefetch(query), candidates)
    return ids[top_k(maxsim_subset(query, rerank_pages, ids), k)]


# representations -----------------------------------------------------------------------------

def pooled(pages: list[np.ndarray], factor: int) -> list[np.ndarray]:
    return pages if factor == 1 else [hierarchical_pool(p, factor).vectors for p in pages]


def mean_vectors(pages: list[np.ndarray]) -> np.ndarray:
    """(n_pages, dim): the normalised mean of each page's rows (a dense prefetch vector)."""
    return l2_normalise(np.stack([p.mean(axis=0) for p in pages]))


def binary_pages(pages: list[np.ndarray]) -> list[np.ndarray]:
    """Sign bits of every row read back as ±1/sqrt(dim): what a float query scores against."""
    dim = pages[0].shape[1]
    out = []
    for p in pages:
        bits = np.unpackbits(binary_quantise(p), axis=-1, count=dim).astype(np.float32)
        out.append((bits * 2.0 - 1.0) / np.sqrt(dim))
    return out


def scalar_pages(pages: list[np.ndarray]) -> list[np.ndarray]:
    """int8 per-row symmetric quantisation, dequantised (what the scorer sees)."""
    out = []
    for p in pages:
        scale = np.abs(p).max(axis=1, keepdims=True) / 127.0
        out.append(np.round(p / scale).clip(-127, 127) * scale)
    return out


GAUSS_2BIT = (np.array([-0.9816, 0.0, 0.9816]), np.array([-1.5104, -0.4528, 0.4528, 1.5104]))
"""Lloyd-Max thresholds and levels (in standard deviations) of the optimal 4-level Gaussian quantiser."""


def two_bit_pages(pages: list[np.ndarray]) -> list[np.ndarray]:
    """2 bits per coordinate with no per-row scale: unit rows in a randomly rotated basis have
    coordinates ~ N(0, 1/dim), quantised with the Gaussian Lloyd-Max levels (as TurboQuant does)."""
    thresholds, levels = GAUSS_2BIT
    dim = pages[0].shape[1]
    sigma = 1.0 / np.sqrt(dim)
    return [levels[np.searchsorted(thresholds * sigma, p)] * sigma for p in pages]


def int4_pages(pages: list[np.ndarray]) -> list[np.ndarray]:
    """4 bits per coordinate, uniform over ±2.5 sigma of N(0, 1/dim), no per-row scale."""
    dim = pages[0].shape[1]
    step = 5.0 / np.sqrt(dim) / 15
    return [np.clip(np.round(p / step - 0.5), -8, 7) * step + step / 2 for p in pages]


def centre_stats(pages: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std) per coordinate over every token of the corpus. MaxSim rankings do not change
    when one vector is subtracted from every doc token (it shifts each query token's max by a
    constant), so quantising residuals from the mean loses less than quantising raw rows."""
    flat = np.concatenate(pages)
    mu = flat.mean(axis=0)
    return mu, (flat - mu).std(axis=0) + 1e-8


def two_bit_centred(pages: list[np.ndarray], mu: np.ndarray, sd: np.ndarray) -> list[np.ndarray]:
    """2 bits per coordinate of the residual from the corpus mean, Lloyd-Max levels per coordinate."""
    thresholds, levels = GAUSS_2BIT
    out = []
    for p in pages:
        z = (p - mu) / sd
        out.append(mu + levels[np.searchsorted(thresholds, z)] * sd)
    return out


def binary_centred(pages: list[np.ndarray], mu: np.ndarray, sd: np.ndarray) -> list[np.ndarray]:
    """1 bit per coordinate: the residual's sign, read back as mean ± E|residual|."""
    half = sd * np.sqrt(2 / np.pi)
    return [mu + np.where(p > mu, half, -half) for p in pages]
