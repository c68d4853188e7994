"""token_batches: which texts share a forward, within the item and padded-token budgets."""

from __future__ import annotations

import random

import pytest

from mmrag.embed.token_budget import token_batches


def test_each_forward_is_within_both_budgets_and_every_text_is_in_one() -> None:
    rng = random.Random(3)
    for _ in range(200):
        sizes = [rng.randint(1, 256) for _ in range(rng.randint(0, 90))]
        max_tokens, max_items = rng.choice([256, 1000, 2048]), rng.choice([1, 7, 32])
        batches = token_batches(sizes, max_tokens, max_items)
        assert sorted(i for b in batches for i in b) == list(range(len(sizes)))
        for b in batches:
            longest = max(sizes[i] for i in b)
            assert len(b) <= max_items and (len(b) == 1 or len(b) * longest <= max_tokens)
            assert sizes[b[0]] == longest  # the longest first: it sets the padding


def test_long_texts_go_in_small_forwards_and_short_ones_together() -> None:
    sizes = [256] * 10 + [16] * 40
    batches = token_batches(sizes, 2048, 32)
    assert [len(b) for b in batches] == [8, 8, 32, 2]  # the second: 2 long + 6 short, padded to 256
    assert token_batches([5000, 3], 2048, 32) == [[0], [1]]  # longer than the budget: alone, not refused


@pytest.mark.parametrize("sizes", [[], [1]])
def test_edges(sizes: list[int]) -> None:
    assert token_batches(sizes, 2048, 32) == ([[0]] if sizes else [])
