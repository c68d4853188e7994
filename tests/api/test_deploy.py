"""The shipped deployment (compose.yaml, docker/Dockerfile) keeps the store and the broker off the network,
keys the store, runs as a non-root user, and keeps the converters away from the spool (issue 21). Read as
files: no Docker engine runs here."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_only_the_api_is_published():
    services = _compose()["services"]
    assert [name for name, s in services.items() if s.get("ports")] == ["api"]


def test_qdrant_requires_the_key_the_store_sends():
    services = _compose()["services"]
    qdrant_key = services["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"]
    store_key = services["api"]["environment"]["MMRAG_STORE__API_KEY"]
    assert qdrant_key == store_key and qdrant_key.startswith("${MMRAG_QDRANT_API_KEY:?")  # compose refuses without it
    for name in ("writer", "cpu-worker", "embed-worker"):
        assert services[name]["environment"]["MMRAG_STORE__API_KEY"] == store_key, name


def test_the_converting_worker_sees_no_catalog_and_keeps_its_job_folders_apart():
    worker = _compose()["services"]["cpu-worker"]
    assert worker["volumes"] == ["spool:/spool"]
    assert any(t.startswith("/convert:") for t in worker["tmpfs"])
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "MMRAG_INGEST__CONVERT_DIR=/convert" in dockerfile and "bubblewrap" in dockerfile


def test_the_image_runs_as_a_non_root_user():
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
