"""Pooling and quantisation maths against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from colpali_engine.compression.token_pooling import HierarchicalTokenPooler

from mmrag.embed.pooling import (
    binary_quantise,
    bytes_per_page,
    hierarchical_pool,
    l2_normalise,
    prefetch_vector,
)
from mmrag.errors import InvalidInput


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    return l2_normalise(np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32))


@pytest.mark.parametrize("factor", [2, 3])
def test_hierarchical_pool_equals_colpali_engine(factor: int) -> None:
    x = unit_rows(60, 24, 2)
    ours = hierarchical_pool(x, factor)
    ref = HierarchicalTokenPooler().pool_embeddings([torch.from_numpy(x)], pool_factor=factor)[0].numpy()
    assert ours.vectors.shape == ref.shape == (60 // factor, 24)
    # same clusters, possibly numbered differently: compare the rows as sorted sets
    order = np.lexsort(ours.vectors.T), np.lexsort(ref.T)
    np.testing.assert_allclose(ours.vectors[order[0]], ref[order[1]], atol=1e-5)


def test_pool_labels_map_every_token_to_its_pooled_row() -> None:
    x = unit_rows(50, 8, 3)
    pooled = hierarchical_pool(x, 3)
    assert pooled.labels.shape == (50,)
    assert set(pooled.labels.tolist()) == set(range(len(pooled.vectors)))
    assert pooled.labels[0] == 0  # ids in order of first appearance
    for c in range(len(pooled.vectors)):
        expected = l2_normalise(x[pooled.labels == c].mean(axis=0))
        np.testing.assert_allclose(pooled.vectors[c], expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(pooled.vectors, axis=1), 1.0, atol=1e-5)


def test_pool_factor_one_and_bad_input() -> None:
    x = unit_rows(7, 4, 4)
    same = hierarchical_pool(x, 1)
    np.testing.assert_array_equal(same.vectors, x)
    np.testing.assert_array_equal(same.labels, np.arange(7))
    with pytest.raises(InvalidInput):
        hierarchical_pool(x, 0)
    with pytest.raises(InvalidInput):
        hierarchical_pool(x[0], 2)


def test_prefetch_vector_is_normalised_mean() -> None:
    x = unit_rows(10, 6, 5)
    v = prefetch_vector(x)
    assert v.shape == (6,)
    np.testing.assert_allclose(v, x.mean(0) / np.linalg.norm(x.mean(0)), atol=1e-6)


def test_binary_quantisation() -> None:
    x = unit_rows(12, 128, 6)
    bits = binary_quantise(x)
    assert bits.shape == (12, 16) and bits.dtype == np.uint8
    signs = np.unpackbits(bits, axis=1).astype(bool)
    np.testing.assert_array_equal(signs, x > 0)


def test_bytes_per_page() -> None:
    assert bytes_per_page(768, 128) == 768 * 128 * 4
    assert bytes_per_page(768, 128, "float16") == 768 * 128 * 2
    assert bytes_per_page(768, 128, pool_factor=3) == 256 * 128 * 4
    assert bytes_per_page(768, 128, "binary") == 768 * 16
    assert bytes_per_page(1, 128, pool_factor=2) == 512
