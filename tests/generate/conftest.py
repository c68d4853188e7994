"""Fixtures: a tiny random Qwen2.5-VL saved to a temp folder, loaded like a hub id."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.vlm_config import VLMConfig
from tests.generate.tiny_vlm import save_tiny_qwen25vl


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_qwen25vl(tmp_path_factory.mktemp("tiny-qwen25vl"))


@pytest.fixture(scope="session")
def vlm_config(tiny_vlm_dir: Path) -> VLMConfig:
    return VLMConfig(
        model=str(tiny_vlm_dir),
        device="cpu",
        dtype="float32",
        max_pixels=64 * 28 * 28,
        max_visual_tokens_per_image=64,
        visual_token_budget=128,
        token_budget=4096,
        max_new_tokens=8,
        queue_timeout_s=10,
        request_timeout_s=60,
    )


@pytest.fixture(scope="session")
def backend(vlm_config: VLMConfig) -> Iterator[TransformersBackend]:
    b = TransformersBackend.load(vlm_config)
    yield b
    b.close()


def png_bytes(width: int, height: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    img = Image.fromarray((rng.random((height, width, 3)) * 255).astype("uint8"))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
