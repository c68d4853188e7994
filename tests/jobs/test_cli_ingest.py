"""`mmrag ingest` follows its job: in-process (no server) and over REST (while `mmrag serve` runs)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.api.conftest import Server
from tests.indexer.conftest import FAKE_ENV
from tests.jobs.helpers import encrypted_pdf, text_pdf

pytestmark = pytest.mark.integration


def run_ingest(data_dir, folder):
    env = {**os.environ, **FAKE_ENV, "MMRAG_DATA_DIR": str(data_dir), "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "cli", "ingest", str(folder), "--corpus", "c"],
                          capture_output=True, text=True, env=env, timeout=180)


def test_cli_ingest_local_then_remote(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(text_pdf("alpha", 3))
    (folder / "locked.pdf").write_bytes(encrypted_pdf())
    (folder / "program.bin").write_bytes(b"MZ\x90\x00" + bytes(200))  # no supported type
    out = run_ingest(tmp_path / "data", folder)
    assert out.returncode == 1, out.stderr
    assert "1 indexed, 0 already present, 2 failed" in out.stderr
    assert "locked.pdf: corrupt_document" in out.stderr and "program.bin: unsupported_media_type" in out.stderr
    assert "pages" in out.stderr  # the progress bar

    (folder / "b.pdf").write_bytes(text_pdf("beta", 2))
    (folder / "locked.pdf").unlink()
    (folder / "program.bin").unlink()
    server = Server(tmp_path / "data", tmp_path / "server.log", FAKE_ENV)
    try:
        out = run_ingest(tmp_path / "data", folder)
        assert out.returncode == 0, out.stderr
        assert "1 indexed, 1 already present, 0 failed" in out.stderr
        assert "POST /corpora/c/documents" in (tmp_path / "server.log").read_text()  # it went over REST
    finally:
        server.stop()
