"""Layering, checked in fresh interpreters: what importing a module pulls in (``sys.modules``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["torch", "transformers", "sentence_transformers", "open_clip", "huggingface_hub", "colpali_engine"]
BACKENDS = ["mmrag.embed.sentence", "mmrag.embed.open_clip_backend", "mmrag.embed.hf_colpali_backend",
            "mmrag.embed.colpali_backend"]


def loaded_after(code: str) -> set[str]:
    """Modules loaded after running ``code`` in a new interpreter (in the repository root)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_config_imports_neither_torch_nor_the_vlm_engine() -> None:
    loaded = loaded_after("import mmrag.config")
    assert "mmrag.generate" not in loaded and "torch" not in loaded
    assert not {m for m in loaded if m.startswith("mmrag.generate.")}


@pytest.mark.parametrize("module", ["mmrag.embed.base", "mmrag.pipeline", "cli"])
def test_importing_loads_no_backend_and_no_model_library(module: str) -> None:
    """Backends are imported when a spec of theirs is first loaded; nothing registers itself at import."""
    loaded = loaded_after(f"import {module}")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert not loaded & set(BACKENDS), sorted(loaded & set(BACKENDS))


def test_a_spec_imports_only_its_own_backend() -> None:
    loaded = loaded_after("from mmrag.embed.base import factory_for\nfactory_for('st')")
    assert "mmrag.embed.sentence" in loaded
    assert not loaded & (set(BACKENDS) - {"mmrag.embed.sentence"})
    assert not loaded & set(HEAVY)  # the backend imports its model library only when it builds a model
