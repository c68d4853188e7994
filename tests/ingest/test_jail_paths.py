"""The converter jail works wherever the service is installed (issue 28): an install, a data folder and
job folders under /tmp, under a path with spaces, or reached through a symlink. Each case builds the
bubblewrap command and runs it for real."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pymupdf
import pytest

from mmrag.config import IngestConfig
from mmrag.ingest import convert
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.convert.jail_mounts import Mount, mount_argv
from mmrag.ingest.convert.sandbox import Limits, job_folder, run_converter

LIMITS = Limits(60, 1 << 30, "the probe")
LAYOUTS = ("under-tmp", "with spaces", "symlinked")


@pytest.fixture()
def under_tmp() -> Iterator[Path]:
    """A fresh folder directly under /tmp (where a clone or a venv made by CI lands)."""
    base = Path(tempfile.mkdtemp(prefix="mmrag-install-", dir="/tmp"))
    base.chmod(0o755)  # the jailed converter (uid 65534 under root) reads the install
    yield base
    shutil.rmtree(base, ignore_errors=True)


def install(base: Path, layout: str, files: dict[str, bytes]) -> tuple[Path, Path]:
    """``files`` in a folder laid out as ``layout`` under ``base``: (the path it is named by, its real path)."""
    real = base / ("inst all/my tools" if layout == "with spaces" else "real/tools")
    real.mkdir(parents=True)
    for name, data in files.items():
        (real / name).write_bytes(data)
    for folder in (real, *real.parents):
        if folder == base:
            break
        folder.chmod(0o755)
    if layout != "symlinked":
        return real, real
    link = base / "venv-link"
    link.symlink_to(real, target_is_directory=True)
    return link, real


def _in_jail(script: list[str], reads: list[Path], parent: Path | None = None) -> tuple[int, str]:
    with job_folder("jail", parent) as folder:
        proc = run_converter(script, LIMITS, folder, "jail", reads=reads)
        return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_jailed_command_finds_its_install_at_any_path(under_tmp, layout):
    named, real = install(under_tmp, layout, {"hello.sh": b"echo installed-here\n"})
    assert str(named).startswith("/tmp/")
    for path in {named, real}:  # a symlinked install is there at both paths
        code, out = _in_jail(["/bin/sh", str(path / "hello.sh")], [named])
        assert code == 0 and "installed-here" in out, (path, out)
    _, out = _in_jail(["/bin/sh", "-c", f"touch '{named}/x' 2>&1; touch /tmp/t && echo tmp-ok"], [named])
    assert "tmp-ok" in out and not (real / "x").exists(), out  # the install read-only, /tmp writable


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_mupdf_worker_converts_from_an_install_at_any_path(under_tmp, layout, monkeypatch):
    """The real converter (Python + PyMuPDF in the jail) with its worker file installed under /tmp, under a
    path with spaces or through a symlink; the job folders under /tmp too."""
    named, _ = install(under_tmp, layout, {"worker.py": convert.WORKER.read_bytes()})
    monkeypatch.setattr(convert, "WORKER", named / "worker.py")
    config = IngestConfig(convert_dir=under_tmp / "job folders")
    pdf = convert_to_pdf(b"# Heron ledger\n\nConverted from an awkward install path.\n", "md", config)
    with pymupdf.open("pdf", pdf) as doc:
        assert "awkward install path" in doc[0].get_text()


def test_other_job_folders_stay_hidden_when_an_install_folder_holds_them(under_tmp):
    spool = under_tmp / "spool"
    other = spool / "mmrag-conv-other" / "job"
    other.mkdir(parents=True)
    (other / "input.docx").write_text("another tenant's upload")
    (under_tmp / "hello.sh").write_text("echo installed-here\n")
    code, out = _in_jail(["/bin/sh", "-c", f"/bin/sh '{under_tmp}/hello.sh'; echo listing: $(ls -A '{spool}'); "
                          f"cat '{other}/input.docx' || echo unread"], [under_tmp], parent=spool)
    assert code == 0 and "installed-here" in out and "listing:\n" in out and "tenant" not in out
    assert "unread" in out, out


def test_mounts_are_made_parents_first():
    mounts = [Mount(PurePosixPath("/tmp/a b/tool"), ("--ro-bind", "/src", "/tmp/a b/tool")),
              Mount(PurePosixPath("/tmp"), ("--bind", "/job-tmp", "/tmp")),
              Mount(PurePosixPath("/job/venv"), ("--ro-bind", "/v", "/job/venv")),
              Mount(PurePosixPath("/job"), ("--bind", "/outside", "/job"))]
    argv = mount_argv(mounts)
    assert argv.index("/job-tmp") < argv.index("/tmp/a b") < argv.index("/src")
    assert argv.index("/outside") < argv.index("/v")
    assert argv.count("/tmp") == 1 and "--symlink" not in argv  # /tmp is a folder bind, made once
