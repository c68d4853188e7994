"""Load test: mixed search / answer / upload traffic from several keys (locust, bench/locustfile.py)
against a real ``mmrag serve`` on 127.0.0.1 that requires keys.

Per round (one locust run of ``--seconds``): throughput and p50 / p99 per route, the non-2xx answers
(only documented 429s may appear), and the server's resident memory. A warm-up round comes first;
memory after the last round is compared with memory after warm-up. Printed: medians over rounds
with 95 % bootstrap intervals in the final RESULT line.

    python -m bench.load --tenants 3 --users 12 --seconds 60 --rounds 5 --rate-per-key 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench._http import ROOT, free_port, start_server, stop_server
from bench._load_docs import small_pdf
from bench._stats import result_line
from mmrag.evaluate.stats import interval
from mmrag.keys import KeyStore
from mmrag.rest_client import Client

SERVER_ENV = {"MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none",
              "MMRAG_API__AUTH": "required"}
ROUTES = ("search", "answer", "upload")


@dataclass(slots=True)
class Round:
    """One locust run: requests per route, latencies (ms), 429s and other non-2xx answers."""

    seconds: float
    requests: dict[str, int] = field(default_factory=dict)
    p50_ms: dict[str, float] = field(default_factory=dict)
    p99_ms: dict[str, float] = field(default_factory=dict)
    rejected_429: int = 0
    failures: dict[str, int] = field(default_factory=dict)  # "route: reason" -> count (must stay empty)
    rss_mb: float = 0.0

    @property
    def throughput(self) -> float:
        return sum(self.requests.values()) / self.seconds


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def percentile(histogram: dict[str, int], q: float) -> float:
    """The q-th percentile (0..100) of locust's response-time histogram {ms: count}."""
    times = np.array(sorted((float(k), n) for k, n in histogram.items()))
    cumulative = np.cumsum(times[:, 1])
    return float(times[np.searchsorted(cumulative, q / 100 * cumulative[-1]), 0])


def seed(url: str, admin: str, corpora: list[str]) -> None:
    """Each tenant's corpus with a few documents to search."""
    with Client(url, api_key=admin) as client:
        for i, corpus in enumerate(corpora):
            client.create_corpus(corpus)
            client.upload(corpus, [(f"seed-{i}-{n}.pdf", small_pdf(10 * i + n)) for n in range(4)], wait=True)


def locust_round(url: str, tenants: list[list[str]], users: int, seconds: int, pid: int) -> Round:
    cmd = [str(Path(sys.executable).with_name("locust")), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
           "--host", url, "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--json", "--skip-log",
           "--stop-timeout", "30"]
    env = {"MMRAG_LOAD_TENANTS": json.dumps(tenants), "PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(ROOT)}
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120, cwd=ROOT)
    stats = json.loads(run.stdout)
    out = Round(seconds=float(seconds), rss_mb=rss_mb(pid))
    for entry in stats:
        name = entry["name"]
        if name.endswith("[429]"):
            out.rejected_429 += entry["num_requests"]
            continue
        out.requests[name] = entry["num_requests"]
        if entry["num_requests"]:
            out.p50_ms[name] = percentile(entry["response_times"], 50)
            out.p99_ms[name] = percentile(entry["response_times"], 99)
        if entry["num_failures"]:
            out.failures[name] = entry["num_failures"]
    return out


def run(tenants: int, users: int, seconds: int, rounds: int, warmup: int, rate_per_key: float = 0.0,
        jobs_per_key: int = 4) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="mmrag-load-") as tmp:
        data = Path(tmp) / "data"
        keys = KeyStore(data)
        admin = keys.create("admin").secret
        corpora = [f"tenant-{i}" for i in range(tenants)]
        tenant_keys = [[c, keys.create("write", c).secret] for c in corpora]
        keys.close()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server([sys.executable, "-m", "cli", "serve", "--port", str(port)], f"{url}/health/ready",
                            env={**SERVER_ENV, "MMRAG_DATA_DIR": str(data),
                                 "MMRAG_API__RATE_PER_KEY": str(rate_per_key),
                                 "MMRAG_API__RATE_BURST": str(max(1, round(rate_per_key * 2))),
                                 "MMRAG_API__MAX_JOBS_PER_KEY": str(jobs_per_key)}, log=Path(tmp) / "server.log")
        try:
            seed(url, admin, corpora)
            warm = locust_round(url, tenant_keys, users, warmup, proc.pid)
            print(f"warm-up: {warm.throughput:.1f} req/s, RSS {warm.rss_mb:.0f} MB", flush=True)
            results = []
            for r in range(rounds):
                results.append(locust_round(url, tenant_keys, users, seconds, proc.pid))
                last = results[-1]
                print(f"round {r + 1}/{rounds}: {last.throughput:.1f} req/s "
                      + " ".join(f"{k} p50 {last.p50_ms.get(k, 0):.0f} p99 {last.p99_ms.get(k, 0):.0f} ms"
                                 for k in ROUTES)
                      + f" | 429s {last.rejected_429} | failures {last.failures or 'none'} | RSS {last.rss_mb:.0f} MB",
                      flush=True)
        finally:
            stop_server(proc)
    return summarise(warm, results)


def summarise(warm: Round, results: list[Round]) -> dict[str, object]:
    values: dict[str, object] = {"throughput": interval([r.throughput for r in results])}
    for route in ROUTES:
        for name, per in (("p50", lambda r, k=route: r.p50_ms.get(k, 0.0)),
                          ("p99", lambda r, k=route: r.p99_ms.get(k, 0.0))):
            values[f"{route}_{name}_ms"] = interval([per(r) for r in results])
    values["rejected_429"] = sum(r.rejected_429 for r in results)
    values["failures"] = sum(sum(r.failures.values()) for r in results)
    values["rss_growth"] = interval([r.rss_mb / warm.rss_mb - 1.0 for r in results])
    values["rss_after_mb"] = round(results[-1].rss_mb, 1)
    values["rss_warm_mb"] = round(warm.rss_mb, 1)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=3, help="corpora, one write key each")
    parser.add_argument("--users", type=int, default=12, help="concurrent locust users (spread over the keys)")
    parser.add_argument("--seconds", type=int, default=60, help="length of each round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=30, help="seconds of warm-up before the rounds")
    parser.add_argument("--rate-per-key", type=float, default=0.0,
                        help="MMRAG_API__RATE_PER_KEY of the server (0: none; burst: 2 s worth); low values "
                        "show the 429 path")
    parser.add_argument("--jobs-per-key", type=int, default=4, help="MMRAG_API__MAX_JOBS_PER_KEY of the server")
    args = parser.parse_args()
    values = run(args.tenants, args.users, args.seconds, args.rounds, args.warmup, args.rate_per_key,
                 args.jobs_per_key)
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
