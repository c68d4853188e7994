"""The one place that turns configured ``device`` / ``dtype`` strings into torch ones.

Used by every model loader (embedders, the VLM backend, the composition root), so that
``auto`` means the same everywhere: device ``auto`` is ``cuda`` when torch sees a GPU, else
``cpu``; dtype ``auto`` is float32 on CPU and bfloat16 on a GPU that supports it, float16 on
one that does not. torch is imported only when a name must be resolved, never at import.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mmrag.errors import InvalidInput

if TYPE_CHECKING:
    import torch

DTYPE_NAMES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
               "bfloat16": "bfloat16", "bf16": "bfloat16"}
"""Accepted dtype spellings -> canonical torch attribute names (besides ``auto``)."""


GPU_DRIVERS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd")
"""What a Linux machine with a GPU torch can use has (NVIDIA's driver, ROCm's)."""


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch is installed and sees a GPU, else ``cpu``; others unchanged. A Linux machine
    without a GPU driver (NVIDIA's or ROCm's) is ``cpu`` without importing torch (seconds of start-up)."""
    if device != "auto":
        return device
    if sys.platform == "linux" and not any(Path(p).exists() for p in GPU_DRIVERS):
        return "cpu"
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype_name(dtype: str, device: str) -> str:
    """Canonical dtype name for a (resolved) device: ``float32``, ``float16`` or ``bfloat16``.

    Raises InvalidInput for an unknown name (the message lists the allowed ones).
    """
    if dtype != "auto":
        name = DTYPE_NAMES.get(dtype)
        if name is None:
            allowed = ", ".join(["auto", *DTYPE_NAMES])
            raise InvalidInput(f"unknown dtype {dtype!r}; allowed: {allowed}")
        return name
    if not device.startswith("cuda"):
        return "float32"
    import torch

    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def resolve_dtype(dtype: str, device: str) -> torch.dtype:
    """The torch dtype :func:`resolve_dtype_name` names."""
    import torch

    result: torch.dtype = getattr(torch, resolve_dtype_name(dtype, device))
    return result


def resolve_device_dtype(device: str, dtype: str) -> tuple[str, torch.dtype]:
    """Both at once: the resolved device and the torch dtype to load weights in on it."""
    dev = resolve_device(device)
    return dev, resolve_dtype(dtype, dev)
