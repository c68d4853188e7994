"""HTTP plumbing the benchmarks share: a free port, a server subprocess started and stopped by PID,
and a closed-loop load of concurrent clients that records each request's latency."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    cmd: Sequence[str],
    health_url: str,
    ready: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 300.0,
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` (cwd: the repository root) and wait until ``ready(GET health_url)``.

    SIGTERM to the benchmark then exits through ``finally`` blocks, so callers' ``stop_server`` runs."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = open(log, "wb") if log is not None else None  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(list(cmd), cwd=ROOT, env={**os.environ, **OFFLINE, **(env or {})},
                            stdout=out, stderr=subprocess.STDOUT if out else None)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
            raise RuntimeError(f"{cmd[0]} exited during start-up (rc {proc.returncode}): {tail}")
        try:
            if ready(httpx.get(health_url, timeout=2)):
                return proc
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    stop_server(proc)
    raise RuntimeError(f"{' '.join(cmd)} did not become ready at {health_url} in {timeout_s:.0f}s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Terminate by PID; kill if it does not exit in 30 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(slots=True)
class LoadRun:
    """One closed-loop run: every request's latency and the wall time of the whole run."""

    wall_s: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, successful requests
    items: int = 0  # items carried by successful requests
    errors: int = 0

    @property
    def items_per_s(self) -> float:
        return self.items / self.wall_s if self.wall_s else 0.0


Send = Callable[[httpx.AsyncClient, int], Awaitable[int]]  # (client, request no.) -> items, raises on failure


async def closed_loop(url: str, send: Send, clients: int, seconds: float) -> LoadRun:
    """``clients`` concurrent clients, each sending its next request when the previous answered,
    until ``seconds`` have passed (requests in flight then still complete and count)."""
    run = LoadRun()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    counter = iter(range(1 << 62))

    async def client(http: httpx.AsyncClient, stop: float) -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            try:
                n = await send(http, next(counter))
            except (httpx.HTTPError, RuntimeError):
                run.errors += 1
                continue
            run.latencies.append(time.perf_counter() - t0)
            run.items += n

    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http, start + seconds) for _ in range(clients)))
        run.wall_s = time.perf_counter() - start
    return run
