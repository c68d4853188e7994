from __future__ import annotations

import pytest

from mmrag.ingest.chunking import chunk_spans


@pytest.mark.parametrize("n,size,overlap", [(0, 10, 2), (1, 10, 2), (10, 10, 2), (11, 10, 2), (250, 120, 30),
                                            (7, 3, 5)])
def test_spans_cover_every_word_in_order(n, size, overlap):
    spans = chunk_spans(n, size, overlap)
    covered = set()
    for s, e in spans:
        assert 0 <= s < e <= n and e - s <= size
        covered.update(range(s, e))
    assert covered == set(range(n))
    assert [s for s, _ in spans] == sorted(s for s, _ in spans)
    if n:
        assert spans[-1][1] == n
