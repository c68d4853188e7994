"""What a person sees when optional models cannot load: the real `mmrag` CLI in a subprocess, no
HF_HUB_OFFLINE set and a hub that does not answer (a closed port on 127.0.0.1). One short line per
model that is off, with its reason, once; no hub-client retry noise; answers say why they are extractive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.embed.conftest import free_port
from tests.fixtures.fake_embedders import BACKENDS_ENV

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return {**env, **BACKENDS_ENV, "MMRAG_DATA_DIR": str(tmp_path / "data"),
            "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}", "HF_HOME": str(tmp_path / "hf"),
            "MMRAG_EMBED__TEXT_MODEL": "fake:8",
            "MMRAG_EMBED__CLIP_MODEL": f"open_clip:ViT-B-32/{tmp_path / 'missing.safetensors'}",
            "MMRAG_EMBED__COLPALI_MODEL": "hf:nobody/no-such-colqwen",
            "MMRAG_VLM__BACKEND": "transformers", "MMRAG_VLM__MODEL": "nobody/no-such-vlm"}


def mmrag(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_one_short_line_per_model_that_is_off_and_the_real_reason_for_extractive_answers(
        cli_env: dict[str, str], corpus_dir: Path) -> None:
    pdf = sorted((corpus_dir / "pdf").glob("*.pdf"))[0]
    ingest = mmrag(cli_env, "ingest", str(pdf), "--corpus", "c")
    assert ingest.returncode == 0, ingest.stderr
    lines = [line for line in ingest.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert sum("space 'clip' is off" in line for line in lines) == 1, ingest.stderr
    assert sum("space 'colpali' is off" in line for line in lines) == 1, ingest.stderr
    assert any("missing.safetensors" in line for line in lines if "'clip'" in line)
    assert "Traceback" not in ingest.stderr and "ERROR root" not in ingest.stderr
    assert all(len(line) < 400 for line in ingest.stderr.splitlines()), ingest.stderr

    answer = mmrag(cli_env, "answer", "What is this about?", "--corpus", "c", "--json")
    assert answer.returncode == 0, answer.stderr
    done = json.loads(answer.stdout)
    assert done["mode"] == "extractive"
    assert "nobody/no-such-vlm could not be loaded" in done["notice"] and "vlm.backend = none" not in done["notice"]
    vlm_lines = [line for line in answer.stderr.splitlines() if "VLM" in line]
    assert len(vlm_lines) == 1 and len(vlm_lines[0]) < 400, answer.stderr
    assert "clip" not in answer.stderr  # the corpus has no visual space: its models are not even tried
