"""`mmrag search` while `mmrag serve` owns the data folder: it goes over REST (the one client) and
its process imports no model code (no torch, transformers, sentence-transformers, PyMuPDF, pipeline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import Server
from tests.indexer.conftest import FAKE_ENV
from tests.jobs.helpers import text_pdf

pytestmark = pytest.mark.integration
HEAVY = ("torch", "transformers", "sentence_transformers", "open_clip", "pymupdf", "qdrant_edge",
         "mmrag.pipeline", "mmrag.embed.base", "mmrag.evaluate")


def imported_modules(importtime_stderr: str) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime_stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def cli_beside_a_server(tmp_path: Path, pages: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cli ARGS`` on a data folder that a real server (corpus ``c``: one zebra PDF of
    ``pages`` pages) owns; the server's log is ``tmp_path / "server.log"``."""
    server = Server(tmp_path / "data", tmp_path / "server.log", FAKE_ENV)
    try:
        assert httpx.post(f"{server.url}/corpora", json={"name": "c"}).status_code == 201
        files = [("files", ("zebra.pdf", text_pdf("zebra stripes and crossings", pages)))]
        r = httpx.post(f"{server.url}/corpora/c/documents", files=files, params={"wait": "true"}, timeout=120)
        assert r.status_code == 201, r.text
        env = {**os.environ, **FAKE_ENV, "MMRAG_DATA_DIR": str(tmp_path / "data")}
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120)
    finally:
        server.stop()


def test_cli_search_goes_over_rest_without_model_imports(tmp_path):
    out = cli_beside_a_server(tmp_path, 2, "-X", "importtime", "-m", "cli", "search", "zebra stripes",
                              "-c", "c", "-k", "2", "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout)
    assert [r["document"] for r in results] == ["zebra.pdf", "zebra.pdf"] and results[0]["page_id"]
    assert "POST /corpora/c/search" in (tmp_path / "server.log").read_text()  # it went over REST
    modules = imported_modules(out.stderr)
    assert "mmrag.rest_client" in modules and "httpx" in modules
    heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == [], f"the REST path of the CLI imported {heavy}"


def test_cli_answer_goes_over_rest(tmp_path):
    """`mmrag answer` chooses like `mmrag search` (open_application): over REST while the server owns the folder."""
    out = cli_beside_a_server(tmp_path, 1, "-m", "cli", "answer", "zebra stripes", "-c", "c", "-k", "1", "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    done = json.loads(out.stdout[out.stdout.index("{"):])
    assert done["mode"] == "extractive" and done["citations"][0]["filename"] == "zebra.pdf"
    assert "POST /corpora/c/answer" in (tmp_path / "server.log").read_text()  # it went over REST
