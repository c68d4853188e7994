"""REST overhead: the same searches through real uvicorn (a subprocess) and in-process,
8 concurrent clients each. The HTTP load comes from ``wrk`` (Debian package; C, event
loop) so that the load generator takes little of the 2 CPU cores the server needs; without
it, 8 Python threads with httpx."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from bench._http import free_port, start_server, stop_server
from bench.retrieval_store import CORPUS, open_pipeline, write_queries
from mmrag.pipeline import Pipeline
from mmrag.types import SearchRequest

CLIENTS = 8


@dataclass(slots=True)
class RestResult:
    """Per-round latencies (ms) of both arms; rounds ABBA-alternated."""

    requests: int  # in-process requests per round
    rest_requests: list[int] = field(default_factory=list)  # REST requests per round
    inproc_p50: list[float] = field(default_factory=list)
    inproc_p99: list[float] = field(default_factory=list)
    rest_p50: list[float] = field(default_factory=list)
    rest_p99: list[float] = field(default_factory=list)


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    arr = 1000 * np.asarray(latencies)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


def _load(call: Callable[[int], None], n_queries: int, requests: int) -> list[float]:
    def one(i: int) -> float:
        t0 = time.perf_counter()
        call(i % n_queries)
        return time.perf_counter() - t0

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(one, range(CLIENTS * 2)))  # warm-up
        return list(pool.map(one, range(requests)))


def _body(i: int, candidates: int) -> dict[str, object]:
    return {"query": f"q{i}", "spaces": ["colpali"], "top_k": 10, "prefetch_limit": candidates}


WRK_SCRIPT = """
local bodies = {%s}
local i = 0
request = function()
  i = i %% #bodies + 1
  return wrk.format("POST", "/corpora/%s/search", {["Content-Type"] = "application/json"}, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK p50=%%f p99=%%f n=%%d errors=%%d\\n", latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.requests, e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def wrk_load(url: str, bodies: list[str], seconds: float, script: Path) -> tuple[float, float, int]:
    """(p50 ms, p99 ms, requests) from ``wrk`` (C, one thread, 8 connections, closed loop)."""
    script.write_text(WRK_SCRIPT % (", ".join(json.dumps(b) for b in bodies), CORPUS))
    subprocess.run(["wrk", "-t1", f"-c{CLIENTS}", "-d2s", "-s", str(script), url], capture_output=True, check=True)
    out = subprocess.run(["wrk", "-t1", f"-c{CLIENTS}", f"-d{max(1, round(seconds))}s", "--timeout", "30s",
                          "-s", str(script), url], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("WRK "))
    fields = dict(kv.split("=") for kv in line.split()[1:])
    if int(fields["errors"]):
        raise RuntimeError(f"wrk saw errors: {out}")
    return float(fields["p50"]), float(fields["p99"]), int(fields["n"])


def httpx_load(url: str, bodies: list[str], requests: int) -> tuple[float, float, int]:
    """Fallback without wrk: 8 threads with their own keep-alive clients."""
    local = threading.local()

    def call(i: int) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=url, timeout=60)
        r = local.client.post(f"/corpora/{CORPUS}/search", content=bodies[i % len(bodies)],
                              headers={"content-type": "application/json"})
        r.raise_for_status()

    p50, p99 = _percentiles(_load(call, len(bodies), requests))
    return p50, p99, requests


def rest_overhead(pipeline: Pipeline, data_dir: Path, qs: list[np.ndarray], candidates: int,
                  requests: int, rounds: int = 5) -> RestResult:
    """Both sides open the stored corpus the same way (a fresh pipeline on the data folder, as
    the server does; the store has one owner, so the arms take turns): in-process, 8 threads call
    the pipeline; REST, a uvicorn subprocess serves the same queries to 8 clients (``wrk`` for as
    long as the first in-process arm took). ``rounds`` rounds, the order ABBA-alternated."""
    pipeline.close()
    qpath = data_dir.parent / "queries.json"
    write_queries(qpath, qs)
    bodies = [json.dumps(_body(i, candidates)) for i in range(len(qs))]
    out = RestResult(requests)
    seconds = 0.0
    for r in range(rounds):
        for arm in ("inproc", "rest") if r % 2 == 0 else ("rest", "inproc"):
            if arm == "inproc":
                t0 = time.perf_counter()
                p50, p99 = _inproc_round(data_dir, qs, candidates, requests)
                seconds = seconds or time.perf_counter() - t0
                out.inproc_p50.append(p50)
                out.inproc_p99.append(p99)
            else:
                p50, p99, n = _rest_round(data_dir, qpath, bodies, seconds, requests)
                out.rest_p50.append(p50)
                out.rest_p99.append(p99)
                out.rest_requests.append(n)
        print(f"  REST round {r + 1}: in-process p50 {out.inproc_p50[-1]:.2f} p99 {out.inproc_p99[-1]:.2f} ms | "
              f"REST p50 {out.rest_p50[-1]:.2f} p99 {out.rest_p99[-1]:.2f} ms | load {os.getloadavg()[0]:.1f}",
              flush=True)
    return out


def _inproc_round(data_dir: Path, qs: list[np.ndarray], candidates: int, requests: int) -> tuple[float, float]:
    pipeline = open_pipeline(data_dir, qs)
    try:
        def inproc(i: int) -> None:
            pipeline.search(CORPUS, SearchRequest(**_body(i, candidates)))  # type: ignore[arg-type]

        return _percentiles(_load(inproc, len(qs), requests))
    finally:
        pipeline.close()


def _rest_round(data_dir: Path, qpath: Path, bodies: list[str], seconds: float,
                requests: int) -> tuple[float, float, int]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server([sys.executable, "-m", "bench.retrieval_server", str(data_dir), str(qpath), str(port)],
                        f"{url}/health", timeout_s=120)
    try:
        if shutil.which("wrk"):
            return wrk_load(url, bodies, seconds or 5.0, data_dir.parent / "search.lua")
        return httpx_load(url, bodies, requests)
    finally:
        stop_server(proc)
