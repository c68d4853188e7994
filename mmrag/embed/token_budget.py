"""How many texts go into one forward pass: no more than ``max_items``, and no more padded tokens (items x
the longest item's tokens) than ``max_tokens``. A transformer's activations grow with the padded tokens
(attention with their square), and ONNX Runtime keeps its memory arena at the largest batch it ever ran, so
the budget bounds what a server holds after a long-page upload (64 pages of 256 tokens: 1.8 GB, kept). On
a CPU the default's forwards ran 1.06x faster than unbounded ones (docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Sequence

CPU_BATCH_TOKENS = 2048
"""The default budget on a CPU (``embed.max_batch_tokens`` 0): 8 texts of 256 tokens, 32 of 64."""


def token_batches(sizes: Sequence[int], max_tokens: int, max_items: int) -> list[list[int]]:
    """Indices of ``sizes`` in forwards, longest first: each forward holds at most ``max_items`` items and
    ``len(forward) * its longest size <= max_tokens`` (a single item longer than the budget goes alone)."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
    batches: list[list[int]] = []
    for i in order:
        current = batches[-1] if batches else None
        if current is not None and len(current) < max_items and (len(current) + 1) * sizes[current[0]] <= max_tokens:
            current.append(i)
        else:
            batches.append([i])
    return batches
