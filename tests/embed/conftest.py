"""Session fixtures: tiny random-weight models of the real architectures, saved under a temp
folder and loaded through ``load_embedder`` exactly like hub ids; a real uvicorn server."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest
import uvicorn
from PIL import Image

from mmrag.embed.base import Embedder, EmbedderOptions, load_embedder
from tests.fixtures.tiny_models import (
    build_tiny_colqwen2,
    build_tiny_colqwen2_5,
    build_tiny_hf_colpali,
    build_tiny_hf_colqwen2,
    build_tiny_open_clip,
)


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach the hub, even if huggingface_hub was imported before this conftest."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session")
def tiny_clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_open_clip(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="session")
def clip_spec(tiny_clip_dir: Path) -> str:
    return f"open_clip:local-dir:{tiny_clip_dir / 'local'}"


@pytest.fixture(scope="session")
def colqwen2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_colqwen2(tmp_path_factory.mktemp("tiny-colqwen2"))


@pytest.fixture(scope="session")
def colqwen2_5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_colqwen2_5(tmp_path_factory.mktemp("tiny-colqwen2_5"))


@pytest.fixture(scope="session")
def hf_colqwen2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_hf_colqwen2(tmp_path_factory.mktemp("tiny-hf-colqwen2"))


@pytest.fixture(scope="session")
def hf_colpali_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_hf_colpali(tmp_path_factory.mktemp("tiny-hf-colpali"))


@pytest.fixture(scope="session")
def multivector_specs(colqwen2_dir: Path, colqwen2_5_dir: Path, hf_colqwen2_dir: Path,
                      hf_colpali_dir: Path) -> dict[str, str]:
    return {"colqwen2": f"colpali:{colqwen2_dir}", "colqwen2_5": f"colpali:{colqwen2_5_dir}",
            "hf_colqwen2": f"hf:{hf_colqwen2_dir}", "hf_colpali": f"hf:{hf_colpali_dir}"}


_LOADED: dict[str, Embedder] = {}


@pytest.fixture(scope="session")
def load() -> Callable[[str], Embedder]:
    """Load a spec once per session (CPU, fp32)."""

    def get(spec: str) -> Embedder:
        if spec not in _LOADED:
            _LOADED[spec] = load_embedder(spec, EmbedderOptions(device="cpu"))
        return _LOADED[spec]

    return get


def random_image(width: int, height: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


@pytest.fixture(scope="session")
def images() -> list[Image.Image]:
    """Pages of different shapes (portrait, landscape, small)."""
    return [random_image(96, 128, 1), random_image(200, 120, 2), random_image(60, 60, 3)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerThread:
    """A real uvicorn server on 127.0.0.1 in a background thread. Lifecycle: ``start()``
    returns once the app finished start-up (models loaded); ``stop()`` shuts it down."""

    def __init__(self, app: object) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")  # type: ignore[arg-type]
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout_s: float = 120) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("embedding service did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="session")
def serve() -> Iterator[Callable[[object], ServerThread]]:
    started: list[ServerThread] = []

    def start(app: object) -> ServerThread:
        server = ServerThread(app).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
