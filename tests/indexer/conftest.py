"""Real processes for the distributed tests: a Redis server and Celery workers, stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.api.conftest import free_port
from tests.fixtures.fake_embedders import BACKENDS_ENV

pytestmark = pytest.mark.integration

FAKE_ENV = {**BACKENDS_ENV,  # the fakes are not in the production table: the subprocesses register them
            "MMRAG_EMBED__TEXT_MODEL": "fake:384", "MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "",
            "MMRAG_VLM__BACKEND": "none",
            "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


class Proc:
    """A subprocess with its output in a log file; ``kill`` (SIGKILL, a crash) or ``stop`` (SIGTERM) by PID."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.log_path = log
        self.log = log.open("a")
        self.proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=self.log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.wait()
        self.log.close()

    def tail(self, n: int = 3000) -> str:
        return self.log_path.read_text()[-n:]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("redis") / "redis.log"
    server = Proc(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                  log, {})
    try:
        client = redis.Redis(port=port)
        deadline = time.time() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert time.time() < deadline, server.tail()
                time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.stop()


class Workers:
    """Celery workers of one deployment (`mmrag worker <role>` subprocesses)."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env, self.procs = folder, env, []  # type: ignore[var-annotated]

    def start(self, role: str) -> Proc:
        proc = Proc([sys.executable, "-m", "cli", "worker", role], self.folder / f"worker-{role}.log", self.env)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for p in self.procs:
            p.stop()
