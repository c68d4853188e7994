"""A short bounded load test (bench/load.py, locust) against a real `mmrag serve` on 127.0.0.1:
several keys, mixed search / answer / upload; the only non-2xx answers are documented 429s, and
resident memory after the run stays within 10 % of after warm-up. Longer runs: docs/benchmarks.md."""

from __future__ import annotations

import pytest

from bench.load import run


@pytest.mark.integration
def test_mixed_load_from_several_keys():
    values = run(tenants=2, users=4, seconds=10, rounds=1, warmup=5, rate_per_key=3.0, jobs_per_key=1)
    assert values["failures"] == 0  # every answer was 2xx or a documented 429
    assert values["rejected_429"] > 0  # 4 users on 2 keys at 3 requests/s per key: the limit answers
    for route in ("search", "answer", "upload"):
        assert values[f"{route}_p50_ms"].value > 0, route  # type: ignore[attr-defined]
    assert abs(values["rss_growth"].value) < 0.10  # type: ignore[attr-defined]
