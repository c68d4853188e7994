"""bench/engine_stall.py: its stall share tells a call that holds the GIL from one that releases it, and a
small round runs on the product's store."""

from __future__ import annotations

import time

from bench.engine_stall import Ticker, one_round, timed


def test_the_stall_share_tells_a_call_holding_the_gil_from_one_releasing_it() -> None:
    ticker = Ticker()
    try:
        time.sleep(0.05)
        _, sleeping = timed(ticker, lambda: time.sleep(0.3))  # releases the GIL: the ticker runs throughout
        seconds, summing = timed(ticker, lambda: sum(range(30_000_000)))  # one C call: the GIL held throughout
    finally:
        ticker.close()
    assert sleeping < 0.2, sleeping
    assert seconds > 0.1 and summing > 0.8, (seconds, summing)


def test_a_round_times_every_call_on_the_embedded_store(tmp_path) -> None:
    ticker = Ticker()
    try:
        out = one_round(tmp_path, 70, 0, ticker, ["upsert", "optimize", "vacuum", "query"])
    finally:
        ticker.close()
    assert set(out) == {"upsert", "optimize", "vacuum", "query"}
    assert all(seconds > 0 and 0 <= share <= 1 for seconds, share in out.values()), out
