"""mmrag.devices: the one resolver of device and dtype names, used by every model loader."""

from __future__ import annotations

import pytest
import torch

from mmrag import devices
from mmrag.errors import InvalidInput


def test_device_auto_follows_torch_and_explicit_names_stay() -> None:
    assert devices.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert devices.resolve_device("cuda:1") == "cuda:1"
    assert devices.resolve_device("cpu") == "cpu"


@pytest.mark.parametrize(("name", "expected"), [
    ("float32", torch.float32), ("fp32", torch.float32), ("float16", torch.float16), ("fp16", torch.float16),
    ("bfloat16", torch.bfloat16), ("bf16", torch.bfloat16)])
def test_dtype_spellings(name: str, expected: torch.dtype) -> None:
    assert devices.resolve_dtype(name, "cpu") == expected
    assert devices.resolve_dtype(name, "cuda") == expected  # an explicit dtype wins on every device


def test_auto_dtype_is_fp32_on_cpu_bf16_on_gpus_that_have_it_else_fp16(monkeypatch: pytest.MonkeyPatch) -> None:
    assert devices.resolve_dtype("auto", "cpu") == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert devices.resolve_device_dtype("cuda:0", "auto") == ("cuda:0", torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert devices.resolve_dtype("auto", "cuda") == torch.float16  # e.g. a T4: no bf16


def test_unknown_dtype_names_what_is_allowed() -> None:
    with pytest.raises(InvalidInput, match="allowed: auto, float32, fp32, float16"):
        devices.resolve_dtype("int4", "cpu")


def test_every_loader_uses_this_module() -> None:
    """The embed backends and the VLM backend take their resolvers from here (no second copy)."""
    from mmrag.embed import colpali_backend, hf_colpali_backend, open_clip_backend
    from mmrag.generate import transformers_backend

    for module in (colpali_backend, hf_colpali_backend, open_clip_backend):
        assert module.resolve_device is devices.resolve_device
        assert module.resolve_dtype is devices.resolve_dtype
    assert transformers_backend.resolve_device_dtype is devices.resolve_device_dtype
