"""What an evaluation tells a REST client names no folder of the server (issue 28): an unknown variant,
a suite that cannot load, and the report itself."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mmrag.errors import InvalidInput, Unavailable
from mmrag.evaluate.runner import build_report_data
from mmrag.evaluate.service import EvaluationService
from mmrag.evaluate.suite import load_suite


def _service(suite_dir: Path, tmp_path: Path) -> EvaluationService:
    return EvaluationService(None, tmp_path / "evaluations", suite_dir.parent)  # type: ignore[arg-type]


def test_an_unknown_variant_names_the_suite_by_its_public_name(suite_dir, tmp_path):
    service = _service(suite_dir, tmp_path)
    with pytest.raises(InvalidInput) as caught:
        service.start("suite", "zzz")
    message = caught.value.message
    assert "'suite'" in message and "'zzz'" in message and "worse" in message, message
    assert str(tmp_path) not in message and "suite.yaml" not in message and "/" not in message, message


def test_a_suite_that_cannot_load_is_the_servers_problem_told_without_paths(suite_dir, tmp_path):
    spec = suite_dir / "suite.yaml"
    spec.write_text(spec.read_text().replace(str(tmp_path / "corpus"), str(tmp_path / "gone")))
    with pytest.raises(Unavailable) as caught:
        _service(suite_dir, tmp_path).start("suite")
    assert "'suite'" in caught.value.message and str(tmp_path) not in caught.value.message, caught.value.message


def test_a_report_over_rest_carries_no_server_folder(suite_dir, tmp_path):
    suite = load_suite(suite_dir)
    data = build_report_data(suite, "in-process", [], [], {"documents": 0}, time.time())
    data.update(schema_version=1, kind="run", artefacts={})
    assert data["suite"]["corpus_dir"] and data["suite"]["path"]  # what report.json keeps on the server's disk
    folder = tmp_path / "evaluations" / "run1"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(data))
    job = {"id": "run1", "suite": "suite", "variant": None, "corpus": suite.corpus_name, "state": "done"}
    (folder / "job.json").write_text(json.dumps(job))
    report = _service(suite_dir, tmp_path).report("run1")
    text = json.dumps(report)
    assert str(tmp_path) not in text and "corpus" not in report["suite"]["dataset"], text
    assert "corpus_dir" not in report["suite"] and "path" not in report["suite"]
    assert report["suite"]["id"] == "suite" and report["suite"]["name"] == "tiny"
