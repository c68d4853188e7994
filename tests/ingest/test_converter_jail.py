"""The converter jail (issue 21): what a converter can see, write and reach, and what happens where
no jail can be made (a clear 503 naming the setting; never a silent fallback)."""

from __future__ import annotations

import os
import shutil

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.config import IngestConfig
from mmrag.errors import Unavailable
from mmrag.ingest.convert import convert_to_pdf, sandbox, worker_reads
from mmrag.ingest.convert.libreoffice import install_reads
from mmrag.ingest.convert.sandbox import Limits, isolation_state, job_folder, run_converter
from mmrag.pipeline import build_pipeline
from tests.ingest.test_formats import formats_file

LIMITS = Limits(60, 1 << 30, "the probe")


def _in_jail(script: str, tmp_path, reads=()) -> tuple[int, str]:
    with job_folder("jail") as folder:
        proc = run_converter(["/bin/sh", "-c", script], LIMITS, folder, "jail", reads=reads)
        return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")


def test_the_jail_is_in_force_here():
    state = isolation_state("jail")
    assert state.in_force, state.detail  # bubblewrap installed (scripts/bootstrap) and usable
    assert state.as_dict()["mode"] == "jail"


def test_a_jailed_converter_sees_only_its_install_and_its_job_folder(tmp_path, settings):
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's own file")
    data = settings.data_dir
    data.mkdir(parents=True)
    (data / "keys.sqlite3").write_text("keys")
    python, reads = worker_reads()
    code, out = _in_jail(f"ls /; cat {secret} || echo NO-SECRET; cat {data}/keys.sqlite3 || echo NO-DATA; "
                         f"ls {tmp_path} || echo NO-TMP; id -u; cat /etc/passwd; touch /usr/x || echo RO-USR; "
                         "touch /job/ok && echo JOB-WRITABLE; touch /tmp/t && echo TMP-IN-JOB; "
                         "cat /proc/net/dev | tail -n +3 | cut -d: -f1", tmp_path, reads=[*reads, *install_reads()])
    assert code == 0, out
    assert "the server's own file" not in out and "NO-SECRET" in out and "NO-DATA" in out and "NO-TMP" in out
    assert "RO-USR" in out and "JOB-WRITABLE" in out and "TMP-IN-JOB" in out
    top = set(out.split("NO-SECRET")[0].split())
    assert top <= {"bin", "dev", "etc", "job", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr", "var",
                   "root", "work", "opt", "home", "cat:", str(secret) + ":", "No", "such", "file", "or", "directory"}
    if os.geteuid() == 0:
        assert "\n65534\n" in out  # root's converter runs as nobody
    assert "root:" not in out  # /etc/passwd names only the converter
    interfaces = {line.strip() for line in out.strip().splitlines()[-2:]}
    assert interfaces == {"lo"} or interfaces <= {"lo", ""}


def test_no_jail_means_a_clear_503_never_a_fallback(monkeypatch, settings, minilm):
    monkeypatch.setattr(sandbox, "_bwrap", lambda: None)
    isolation_state.cache_clear()
    try:
        with pytest.raises(Unavailable, match="MMRAG_INGEST__CONVERT_ISOLATION"):
            convert_to_pdf(formats_file("md/wiki.md"), "md", IngestConfig())
        pipeline = build_pipeline(settings, embedders={"text": minilm})
        with TestClient(create_app(settings, pipeline)) as client:
            health = client.get("/health").json()["convert_isolation"]
            assert health["mode"] == "jail" and health["in_force"] is False and "bubblewrap" in health["detail"]
            client.post("/corpora", json={"name": "docs", "config": {"spaces": ["bm25"]}})
            r = client.post("/corpora/docs/documents", files=[("files", ("w.docx", formats_file("docx/word_sample.docx")))])
            assert r.status_code == 503, r.text
            assert "MMRAG_INGEST__CONVERT_ISOLATION" in r.json()["errors"][0]["message"]
            pdf = client.post("/corpora/docs/documents", files=[("files", ("a.pdf", b"%PDF-1.4 x"))])
            assert pdf.status_code != 503  # PDFs and images need no converter
        pipeline.close()
        weaker = IngestConfig(convert_isolation="network")  # chosen explicitly: runs, without the jail
        assert convert_to_pdf(formats_file("md/wiki.md"), "md", weaker).startswith(b"%PDF")
    finally:
        isolation_state.cache_clear()


def test_health_says_which_isolation_is_in_force(settings, minilm):
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as client:
        health = client.get("/health").json()["convert_isolation"]
    pipeline.close()
    assert health == {"mode": "jail", "in_force": True, "detail": isolation_state("jail").detail}
    assert "bubblewrap" in health["detail"]


def test_the_jail_names_its_binds_explicitly():
    """Read-only: the system paths, then exactly the converter's own install; writable: the job folder only."""
    reads = worker_reads()[1]
    with job_folder("jail") as folder:
        argv = sandbox.jail_argv(folder, reads)
        sources = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
        writable = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
        allowed = {*sandbox.SYSTEM_READS, *(str(p) for p in reads), str(folder.root / "passwd"),
                   str(folder.root / "group")}
        assert set(sources) <= allowed | {f"/{n}" for n in ("bin", "sbin", "lib", "lib32", "lib64", "libx32")}, sources
        assert writable == [str(folder.outside)]
    assert "/usr" in sources and "--unshare-net" in argv and "--die-with-parent" in argv
    assert argv[0] == shutil.which("bwrap")
