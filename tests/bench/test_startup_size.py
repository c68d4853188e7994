"""bench/startup_size.py: a start's line split into its phases."""

from __future__ import annotations

import pytest

from bench.startup_size import phases


def test_phases_are_the_gaps_between_a_starts_marks() -> None:
    start = {"imports_s": 2.0, "built_s": 3.5, "warm_s": 8.0, "opened_s": 8.75, "ready_s": 10.0, "rss_gb": 1.0}
    assert phases(start) == pytest.approx({"imports": 2.0, "build": 1.5, "warm_up": 4.5, "open": 0.75,
                                           "first_search": 1.25})
    assert sum(phases(start).values()) == pytest.approx(start["ready_s"])
