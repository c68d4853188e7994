"""Pure numpy maths over multi-vector embeddings: token pooling, prefetch vectors, binary quantisation and the
index size they cost (MaxSim itself is the store's: a multi-vector query). scipy is imported when pages are pooled.

Shapes: a multi-vector is ``(n_tokens, dim)`` float32 with L2-normalised rows; a query
is ``(n_query_tokens, dim)``. Nothing here touches torch or a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from mmrag.errors import InvalidInput


def l2_normalise(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Rows divided by their L2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=axis, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


@dataclass(frozen=True, slots=True)
class PooledTokens:
    vectors: np.ndarray  # (n_clusters, dim) float32, each row the normalised mean of its tokens
    labels: np.ndarray  # (n_tokens,) int: cluster (= row of ``vectors``) of every input token


def hierarchical_pool(embedding: np.ndarray, pool_factor: int) -> PooledTokens:
    """Hierarchical token pooling (Ward linkage on ``1 - cosine``), as colpali-engine's
    ``HierarchicalTokenPooler``: at most ``max(n_tokens // pool_factor, 1)`` clusters, each
    replaced by the L2-normalised mean of its tokens. Cluster ids are compact ``0..k-1`` in
    order of first appearance, so ``labels`` maps every input token to its pooled row.
    """
    if embedding.ndim != 2:
        raise InvalidInput(f"pooling needs a (n_tokens, dim) array, got shape {embedding.shape}")
    if pool_factor < 1:
        raise InvalidInput(f"pool_factor must be >= 1, got {pool_factor}")
    n_tokens = embedding.shape[0]
    x = embedding.astype(np.float32, copy=False)
    if pool_factor == 1 or n_tokens <= 1:
        return PooledTokens(vectors=x.copy(), labels=np.arange(n_tokens))
    from scipy.cluster.hierarchy import fcluster, linkage  # 0.5 s of imports: only when pages are pooled

    distances = 1.0 - x @ x.T  # (n, n): each row is an observation, as in colpali-engine
    tree = linkage(distances, metric="euclidean", method="ward")
    raw = fcluster(tree, t=max(n_tokens // pool_factor, 1), criterion="maxclust")
    _, first, labels = np.unique(raw, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # renumber clusters by first token position
    labels = order[labels]
    sums = np.zeros((len(first), x.shape[1]), dtype=np.float32)
    np.add.at(sums, labels, x)
    return PooledTokens(vectors=l2_normalise(sums), labels=labels)


def prefetch_vector(embedding: np.ndarray) -> np.ndarray:
    """One dense ``(dim,)`` vector for cheap first-stage search: the normalised mean of the rows."""
    return l2_normalise(embedding.astype(np.float32).mean(axis=0))


def binary_quantise(embedding: np.ndarray) -> np.ndarray:
    """Sign bits packed 8 per byte: ``(n_tokens, dim)`` float -> ``(n_tokens, ceil(dim/8))`` uint8."""
    return np.packbits(embedding > 0, axis=-1)


Representation = Literal["float32", "float16", "binary"]


def bytes_per_page(n_tokens: int, dim: int, representation: Representation = "float32",
                   pool_factor: int = 1) -> int:
    """Raw vector bytes one page's multi-vector costs in an index (no index overhead).

    ``pool_factor`` > 1 counts the ``max(n_tokens // pool_factor, 1)`` pooled rows.
    """
    rows = n_tokens if pool_factor == 1 else max(n_tokens // pool_factor, 1)
    if representation == "binary":
        return rows * ((dim + 7) // 8)
    return rows * dim * (4 if representation == "float32" else 2)
