"""The ``mmrag eval`` typer app end to end (CliRunner) on the real pipeline: it ingests through the
jobs, answers with the configured VLM (a tiny random Qwen2.5-VL reading the stored page images),
and compares two runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.eval_cmd import eval_app
from mmrag.config import merge_settings
from tests.generate.tiny_vlm import save_tiny_qwen25vl

runner = CliRunner()


@pytest.fixture()
def vlm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    model = save_tiny_qwen25vl(tmp_path / "tiny-vlm")
    env = {"MMRAG_EMBED__TEXT_MODEL": "fake:384", "MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "",
           "MMRAG_VLM__BACKEND": "transformers", "MMRAG_VLM__MODEL": str(model), "MMRAG_VLM__DEVICE": "cpu",
           "MMRAG_VLM__DTYPE": "float32", "MMRAG_VLM__MAX_PIXELS": str(64 * 28 * 28),
           "MMRAG_VLM__MAX_VISUAL_TOKENS_PER_IMAGE": "64", "MMRAG_VLM__VISUAL_TOKEN_BUDGET": "128",
           "MMRAG_VLM__TOKEN_BUDGET": "4096", "MMRAG_VLM__MAX_NEW_TOKENS": "4"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return tmp_path / "data"


def test_run_answers_with_the_vlm_then_compare(suite_dir: Path, tmp_path: Path, vlm_env: Path) -> None:
    good, dense = tmp_path / "good", tmp_path / "dense"
    result = runner.invoke(eval_app, ["run", str(suite_dir), "--out", str(good), "--data-dir", str(vlm_env)])
    assert result.exit_code == 0, result.output
    assert "ndcg@3" in result.output
    report = json.loads((good / "report.json").read_text())
    assert report["answer_modes"] == {"vlm": 2}  # the pipeline's answer service, not an extractive stand-in
    assert report["failures"] == {"search": 0, "answer": 0}  # the VLM decoded the stored page images
    assert report["metrics"]["ndcg@3"] > 0.5 and report["ingest"]["pages"] == 6
    assert (vlm_env / "jobs.sqlite3").exists()  # ingested through the jobs pipeline
    args = ["run", str(suite_dir), "--out", str(dense), "--spaces", "text", "--no-plots", "--data-dir", str(vlm_env)]
    result = runner.invoke(eval_app, args)
    assert result.exit_code == 0, result.output
    assert json.loads((dense / "report.json").read_text())["config"]["pipeline"]["spaces"] == ["text"]

    out = tmp_path / "cmp"
    args = ["compare", str(good), str(dense), "--out", str(out), "--samples", "2000", "--seed", "3"]
    result = runner.invoke(eval_app, args)
    assert result.exit_code == 0, result.output
    comparison = json.loads((out / "compare.json").read_text())
    assert comparison["kind"] == "compare" and comparison["paired_items"] == 5 + 2  # queries + QA items
    ndcg = comparison["metrics"]["ndcg@3"]
    assert ndcg["delta"] < 0  # hash "embeddings" (fake:384) rank far worse than BM25
    assert ndcg["ci_low"] <= ndcg["delta"] <= ndcg["ci_high"]
    assert (out / "compare.md").read_text().startswith("# Comparison on tiny")
    assert (out / "scatter_ndcg_at_3.png").read_bytes()[:4] == b"\x89PNG"
    # same seed, same numbers; a run against itself has zero deltas
    runner.invoke(eval_app, args)
    assert json.loads((out / "compare.json").read_text())["metrics"] == comparison["metrics"]
    result = runner.invoke(eval_app, ["compare", str(good), str(good), "--out", str(tmp_path / "self")])
    same = json.loads((tmp_path / "self" / "compare.json").read_text())["metrics"]
    assert all(m["delta"] == 0 and m["ci_low"] <= 0 <= m["ci_high"] and m["p_value"] == 1 for m in same.values())


def test_errors_exit_with_code_2(tmp_path: Path) -> None:
    result = runner.invoke(eval_app, ["run", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "no suite" in result.output
    result = runner.invoke(eval_app, ["compare", str(tmp_path), str(tmp_path)])
    assert result.exit_code == 2


def test_split_option_reaches_the_suite(suite_dir: Path) -> None:
    result = runner.invoke(eval_app, ["run", str(suite_dir), "--split", "test"])  # the tiny suite has no split
    assert result.exit_code == 2
    assert "no query has split 'test'" in result.output


def test_merge_settings_keeps_unrelated_fields() -> None:
    from mmrag.config import Settings

    base = Settings(data_dir=Path("/tmp/x"))
    merged = merge_settings(base, {"embed": {"clip_model": None}, "retrieve": {"rrf_k": 10}})
    assert merged.embed.clip_model is None
    assert merged.embed.text_model == base.embed.text_model
    assert merged.retrieve.rrf_k == 10 and merged.data_dir == Path("/tmp/x")
