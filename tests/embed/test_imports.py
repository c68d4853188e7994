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


def test_a_cached_int8_text_model_loads_and_embeds_without_torch(tmp_path: Path) -> None:
    """The int8 export is found by its model folder's files (no weights loaded) and run by ONNX Runtime with the
    model's tokenizer: a process that embeds with a cached export imports no model library (seconds of a
    search's start-up); the process that builds it loads torch."""
    load = ("from mmrag.embed.base import EmbedderOptions, load_embedder\n"
            f"m = load_embedder('st:sentence-transformers/all-MiniLM-L6-v2', EmbedderOptions(device='cpu', "
            f"text_precision='int8', cache_dir={str(tmp_path)!r}))\n"
            "assert m.embed_batch(['a query'], 'query')[0].shape == (384,)")
    assert "torch" in loaded_after(load)  # the first load exports the model
    assert list(tmp_path.glob("onnx-int8/*/model.onnx"))
    cached = loaded_after(load)
    assert not cached & set(HEAVY), sorted(cached & set(HEAVY))
