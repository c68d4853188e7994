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
    reads = [*worker_reads()[1], *install_reads()]

    def run(script: str) -> tuple[int, str]:
        return _in_jail(script + " 2>&1", tmp_path, reads)

    assert run(f"cat {secret}")[0] != 0 and "own file" not in run(f"cat {secret}")[1]
    assert run(f"cat {data}/keys.sqlite3")[0] != 0
    assert run(f"ls {tmp_path}")[0] != 0
    code, listing = run("ls /")
    bound = {p.parts[1] for p in reads}  # the install's own top folders (/root/.pyenv, /opt, the checkout)
    system = {"bin", "dev", "etc", "job", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr", "var"}
    assert code == 0 and set(listing.split()) <= system | bound, (listing, bound)
    assert tmp_path.parts[1] not in bound or run(f"ls {tmp_path.parent}")[0] != 0
    assert run("touch /usr/x")[0] != 0 and run("touch /etc/x")[0] != 0
    assert run("touch /job/ok && touch /tmp/t")[0] == 0  # the job folder (and /tmp inside it) only
    code, users = run("cat /etc/passwd")
    assert code == 0 and "root:" not in users and len(users.strip().splitlines()) == 1
    if os.geteuid() == 0:
        assert run("id -u")[1].strip() == "65534"  # root's converter runs as nobody, no capabilities
        assert run("grep CapEff /proc/self/status")[1].split()[-1] == "0000000000000000"
    code, net = run("tail -n +3 /proc/net/dev | cut -d: -f1")
    assert code == 0 and {line.strip() for line in net.splitlines()} == {"lo"}


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
            docx = formats_file("docx/word_sample.docx")
            r = client.post("/corpora/docs/documents", files=[("files", ("w.docx", docx))])
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
        assert writable == [str(folder.outside), str(folder.outside / "tmp")]  # /job, and its tmp at /tmp
    assert "/usr" in sources and "--unshare-net" in argv and "--die-with-parent" in argv
    assert argv[0] == shutil.which("bwrap")
