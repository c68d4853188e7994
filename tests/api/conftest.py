"""API fixtures: an in-process app (TestClient) and a real uvicorn process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.pipeline import build_pipeline


@pytest.fixture()
def client(settings, minilm) -> Iterator[TestClient]:
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as c:
        yield c
    pipeline.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``mmrag serve`` in a subprocess on 127.0.0.1; stopped by PID."""

    def __init__(self, data_dir: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        env = {**os.environ, "MMRAG_DATA_DIR": str(data_dir), "MMRAG_EMBED__CLIP_MODEL": "",
               "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none", "HF_HUB_OFFLINE": "1", **(env or {})}
        self.log = log.open("a")
        self.proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--port", str(self.port)],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 180
        while time.time() < deadline:
            assert self.proc.poll() is None, f"server exited: {log.read_text()[-2000:]}"
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise TimeoutError(f"server did not start: {log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks run (a crash)."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A live server with two tenants' corpora, their read keys and a tiny VLM (tests/api/tenants.py)."""
    from tests.api.tenants import start_tenants

    started = start_tenants(tmp_path_factory.mktemp("tenants"))
    yield started
    started.server.stop()
