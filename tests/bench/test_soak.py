"""The soak (bench/soak.py): its figures on synthetic series (they must catch a leak and a slowdown), the
process-tree sampler on real processes, and a short run of the whole harness against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import pytest

from bench import soak
from bench._soak_series import (
    Busy,
    Request,
    Sample,
    Series,
    errors_5xx,
    p99_ratio,
    rss_growth,
    sample,
    slow_overlap,
    status_counts,
    summarise,
    window_rows,
    windows,
    write,
)
from bench._stats import result_line


def _samples(duration: float, rss: Callable[[float], float], every: float = 10.0,
             worker: Callable[[float], float] = lambda t: 100.0) -> list[Sample]:
    rng = np.random.default_rng(0)
    out = []
    for t in np.arange(0, duration + every / 2, every):
        server, child = float(rss(t)) + rng.normal(0, 2), float(worker(t)) + rng.normal(0, 1)
        out.append(Sample(t, server, {"1:python3": child}, 40, server + child))
    return out


def _requests(duration: float, latency: Callable[[float], float], per_s: float = 2.0) -> list[Request]:
    rng = np.random.default_rng(1)
    return [Request(float(t), "search", 200, float(latency(t)) * rng.lognormal(0, 0.3))
            for t in np.arange(0, duration, 1 / per_s)]


def test_windows_of_an_hour_and_of_a_short_run() -> None:
    hour = windows(3600)
    assert (hour.warm_end, hour.first, hour.last) == (360, (360, 960), (3000, 3600))
    short = windows(600)  # a sixth of the run when that is under ten minutes
    assert (short.warm_end, short.first, short.last) == (60, (60, 160), (500, 600))
    with pytest.raises(ValueError):
        windows(0)


def test_flat_memory_meets_the_target_and_a_leak_does_not() -> None:
    flat = rss_growth(_samples(3600, lambda t: 1000), 3600)
    assert abs(flat.value) < 0.01 and flat.meets(0.05, at_least=False)
    leak = rss_growth(_samples(3600, lambda t: 1000 + t / 36), 3600)  # +100 MB an hour on 1.1 GB
    assert leak.value > 0.05 and leak.lo > 0.05 and not leak.meets(0.05, at_least=False)
    warm_only = rss_growth(_samples(3600, lambda t: 500 if t < 300 else 1000), 3600)  # growth in warm-up
    assert abs(warm_only.value) < 0.01
    server = rss_growth(_samples(3600, lambda t: 1000 + t / 36), 3600, which="server")
    assert server.value > leak.value  # the children's flat 100 MB dilute the total's growth


def test_rss_growth_is_the_larger_of_the_server_and_a_worker_and_ignores_how_many_run() -> None:
    leaky_worker = _samples(3600, lambda t: 1000, worker=lambda t: 100 + t / 360)  # +10 MB an hour per worker
    values = summarise(Series(_requests(3600, lambda t: 0.05), leaky_worker), 3600)
    assert values["server_rss_growth"].meets(0.05, at_least=False)  # type: ignore[union-attr]
    assert values["rss_growth"] == values["worker_rss_growth"] and values["rss_growth"].lo > 0.05  # type: ignore[union-attr]
    busy_end = [Sample(s.t, s.server_rss_mb, {**s.children_rss_mb, **({f"{k}:python3": 100.0 for k in range(2, 10)}
                                                                       | {"11:soffice.bin": 300.0}
                                                                       if s.t > 3000 else {})},
                       s.fds, s.tree_pss_mb + (1100 if s.t > 3000 else 0))
                for s in _samples(3600, lambda t: 1000)]  # eight more workers and a converter at the end
    busy = summarise(Series(_requests(3600, lambda t: 0.05), busy_end), 3600)
    assert busy["rss_growth"].meets(0.05, at_least=False)  # type: ignore[union-attr]
    assert busy["tree_pss_growth"].lo > 0.5  # type: ignore[union-attr]  # the whole tree's sum moves with them


def test_a_slower_end_shows_in_the_p99_ratio() -> None:
    steady = p99_ratio(_requests(3600, lambda t: 0.05), 3600)
    assert 0.8 < steady.value < 1.2 and steady.lo < 1 < steady.hi
    slower = p99_ratio(_requests(3600, lambda t: 0.05 if t < 3000 else 0.08), 3600)
    assert slower.lo > 1.2 and not slower.meets(1.2, at_least=False)
    failed = [Request(r.t, "search", 503, 10.0) for r in _requests(3600, lambda t: 0.05)]
    assert p99_ratio(_requests(3600, lambda t: 0.05) + failed, 3600).value == steady.value  # 2xx only
    with pytest.raises(ValueError):
        p99_ratio([Request(10.0, "answer", 200, 0.1)], 3600)  # no search in either window


def test_slow_searches_are_lined_up_with_the_background_work_they_overlap() -> None:
    busy = [Busy("ingest", t, t + 20) for t in range(100, 3600, 200)]  # 10 % of the time
    busy += [Busy("evaluation", t, t + 60) for t in range(0, 3600, 300)]  # 20 % of the time
    slowed = _requests(3600, lambda t: 0.5 if any(b.start <= t <= b.end for b in busy[:18]) else 0.05)
    found = slow_overlap(slowed, busy)
    assert found is not None and found.slow == 72 and found.cut_s > 0.05  # 1 % of 7,200 searches
    shares = found.shares
    assert abs(shares["ingest"][0] - 0.1) < 0.02 and shares["ingest"][1] == 1.0
    assert abs(shares["evaluation"][0] - 0.2) < 0.03 and shares["evaluation"][1] < 0.5
    assert shares["any"][1] == 1.0
    even = slow_overlap(_requests(3600, lambda t: 0.05), busy)  # the tail is noise: no kind stands out
    assert even is not None and abs(even.shares["ingest"][1] - even.shares["ingest"][0]) < 0.15
    assert slow_overlap([Request(1.0, "answer", 200, 0.1)], busy) is None


def test_overlap_with_a_union_of_spans_equals_the_plain_check() -> None:
    import random

    from bench._soak_series import _meets, _union

    rng = random.Random(0)
    spans = [Busy("x", a, a + rng.uniform(0, 30)) for a in (rng.uniform(0, 1000) for _ in range(60))]
    union = _union(spans)
    for _ in range(2000):
        a = rng.uniform(-50, 1050)
        b = a + rng.uniform(0, 5)
        assert _meets(union, a, b) == any(s.start <= b and a <= s.end for s in spans), (a, b)


def test_statuses_and_the_result_line() -> None:
    requests = [*_requests(600, lambda t: 0.05), Request(100, "upload", 500, 0.1),
                Request(200, "chat", 0, 300.0), Request(300, "search", 422, 0.01)]
    series = Series(requests, _samples(600, lambda t: 1000))
    assert errors_5xx(requests) == 1
    assert status_counts(requests)["upload 500"] == 1 and status_counts(requests)["chat 0"] == 1
    values = summarise(series, 600)
    line = result_line(values)
    assert "errors_5xx=1 " in line and "errors_transport=1 " in line and "minutes=10.0" in line
    for name in ("rss_growth", "p99_ratio"):
        assert f" {name}=" in line and f" {name}_lo=" in line and f" {name}_hi=" in line
    rows = window_rows(series)
    assert sum(int(r["status_5xx"] or 0) for r in rows) == 1 and sum(int(r["status_4xx"] or 0) for r in rows) == 1
    assert sum(int(r["requests"] or 0) for r in rows) == len(requests)  # every request lands in a row


def test_the_sampler_walks_the_process_tree() -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30; wait"])  # a child with a grandchild
    try:
        deadline = time.monotonic() + 10
        while True:
            s = sample(os.getpid(), 0.0)
            names = [name.split(":", 1)[1] for name in s.children_rss_mb]
            if names.count("sleep") == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "sh" in names and names.count("sleep") == 2, names
        assert s.server_rss_mb > 10 and s.fds >= 3
        assert s.total_rss_mb == pytest.approx(s.server_rss_mb + sum(s.children_rss_mb.values()))
        assert 0 < s.tree_pss_mb <= s.total_rss_mb + 1  # shared pages counted once
    finally:
        shell.kill()
        shell.wait()


@pytest.mark.integration
def test_a_short_soak_against_a_real_server(tmp_path) -> None:
    lines: list[str] = []
    series, duration = soak.run(1.0, seed=3, data_dir=tmp_path / "data", out=tmp_path / "out", tenants=2,
                                clients=1, think_s=0.3, every_s=3.0, eval_every_s=25.0, log=lines.append)
    statuses = status_counts(series.requests)
    assert duration >= 60 and len(series.samples) >= 10
    assert statuses["search 200"] > 10 and statuses["answer 200"] + statuses["chat 200"] > 0, statuses
    assert errors_5xx(series.requests) == 0, statuses
    assert sum(n for k, n in statuses.items() if k.endswith(" 0")) == 0, statuses  # every request answered
    refused = [k for k in statuses if k.split()[1].startswith("4") and not k.endswith(" 429")]
    assert not refused, statuses  # the harness sends only valid requests: a 4xx is its bug or the server's
    assert all(s.server_rss_mb > 50 for s in series.samples)
    assert any(s.children_rss_mb for s in series.samples)  # the server's workers are in the tree
    paths = write(series, duration, tmp_path / "out")
    assert [p.name for p in paths][:2] == ["soak.csv", "soak.json"]
    assert len((tmp_path / "out" / "soak.csv").read_text().splitlines()) == len(series.samples) + 1
    written = json.loads((tmp_path / "out" / "soak.json").read_text())
    assert written["statuses"] == dict(statuses) and len(written["requests"]) == len(series.requests)
    ingests = [b for b in series.busy if b.kind == "ingest"]  # the server's own times of the clients' jobs
    assert ingests and all(0 <= b.start <= b.end <= duration + 330 for b in ingests), series.busy
    line = result_line(summarise(series, duration))
    assert "errors_5xx=0 " in line and " p99_ratio_hi=" in line and " rss_growth_hi=" in line
    run = subprocess.run([sys.executable, "-m", "bench.soak", "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "--minutes" in run.stdout
