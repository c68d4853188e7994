"""REST overhead: the same searches through real uvicorn (a subprocess) and in-process,
8 concurrent clients each. The HTTP load comes from ``wrk`` (Debian package; C, event
loop) so that the load generator takes little of the 2 CPU cores the server needs; without
it, 8 Python threads with httpx."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from bench.retrieval_store import CORPUS, open_pipeline, write_queries
from mmrag.pipeline import Pipeline
from mmrag.types import SearchRequest

CLIENTS = 8


@dataclass(frozen=True, slots=True)
class RestResult:
    requests: int  # in-process
    rest_requests: int
    inproc_p50: float  # ms
    inproc_p99: float
    rest_p50: float
    rest_p99: float


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
                  requests: int) -> RestResult:
    """Both sides open the stored corpus the same way (a fresh pipeline on the data folder, as
    the server does): first in-process (8 threads calling the pipeline), then that pipeline
    is closed and a uvicorn subprocess serves the same queries to 8 clients."""
    pipeline.close()
    pipeline = open_pipeline(data_dir, qs)

    def inproc(i: int) -> None:
        pipeline.search(CORPUS, SearchRequest(**_body(i, candidates)))  # type: ignore[arg-type]

    t0 = time.perf_counter()
    local = _load(inproc, len(qs), requests)
    seconds = time.perf_counter() - t0
    pipeline.close()
    qpath = data_dir.parent / "queries.json"
    write_queries(qpath, qs)
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "bench.retrieval_server", str(data_dir), str(qpath), str(port)],
                            env=env)
    bodies = [json.dumps(_body(i, candidates)) for i in range(len(qs))]
    try:
        url = f"http://127.0.0.1:{port}"
        _wait(url, proc)
        if shutil.which("wrk"):
            rp50, rp99, n = wrk_load(url, bodies, seconds, data_dir.parent / "search.lua")
        else:
            rp50, rp99, n = httpx_load(url, bodies, requests)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    lp50, lp99 = _percentiles(local)
    return RestResult(requests, n, lp50, lp99, rp50, rp99)


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("benchmark server exited")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise TimeoutError("benchmark server did not start")
