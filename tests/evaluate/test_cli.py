"""The ``mmrag eval`` typer app end to end (CliRunner): run with a fake pipeline, compare two runs."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mmrag.cli.eval_cmd import eval_app, merge_settings

from .conftest import FakePipeline

runner = CliRunner()


class ClosingPipeline(FakePipeline):
    closed = 0

    def close(self) -> None:
        ClosingPipeline.closed += 1


@pytest.fixture
def fake_pipeline_module(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    built: list[object] = []
    module = types.ModuleType("mmrag.pipeline")

    def build_pipeline(settings: object) -> ClosingPipeline:
        built.append(settings)
        return ClosingPipeline()

    module.build_pipeline = build_pipeline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mmrag.pipeline", module)
    return built


def test_run_then_compare(suite_dir: Path, tmp_path: Path, fake_pipeline_module: list[object]) -> None:
    good, worse = tmp_path / "good", tmp_path / "worse"
    data_dir = tmp_path / "data"
    result = runner.invoke(eval_app, ["run", str(suite_dir), "--out", str(good), "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert "ndcg@3" in result.output
    assert fake_pipeline_module[0].data_dir == data_dir.resolve()  # type: ignore[attr-defined]
    assert ClosingPipeline.closed >= 1
    # without an answer service on the pipeline, answers are extractive (no VLM) and labelled so
    assert json.loads((good / "report.json").read_text())["answer_modes"] == {"extractive": 2}
    result = runner.invoke(eval_app, ["run", str(suite_dir), "--out", str(worse), "--spaces", "worse", "--no-plots"])
    assert result.exit_code == 0, result.output
    assert json.loads((worse / "report.json").read_text())["config"]["pipeline"]["spaces"] == ["worse"]

    out = tmp_path / "cmp"
    args = ["compare", str(good), str(worse), "--out", str(out), "--samples", "2000", "--seed", "3"]
    result = runner.invoke(eval_app, args)
    assert result.exit_code == 0, result.output
    comparison = json.loads((out / "compare.json").read_text())
    assert comparison["kind"] == "compare" and comparison["paired_items"] == 5 + 2  # queries + QA items
    ndcg = comparison["metrics"]["ndcg@3"]
    assert ndcg["delta"] < 0 and ndcg["mean_b"] < ndcg["mean_a"]
    assert ndcg["ci_high"] <= 0
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


def test_merge_settings_keeps_unrelated_fields() -> None:
    from mmrag.config import Settings

    base = Settings(data_dir=Path("/tmp/x"))
    merged = merge_settings(base, {"embed": {"clip_model": None}, "retrieve": {"rrf_k": 10}})
    assert merged.embed.clip_model is None
    assert merged.embed.text_model == base.embed.text_model
    assert merged.retrieve.rrf_k == 10 and merged.data_dir == Path("/tmp/x")
