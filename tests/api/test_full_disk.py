"""A full disk under the data folder (issue 42): the data folder lives on a 64 MiB tmpfs this test mounts,
which is filled for real. An upload that finds no room is refused with a 507 naming the cause; one with
room for its bytes but not for its pages fails the same way when its job meets the full disk; the corpus
indexed before stays whole and gives the same search results; once space returns, the next upload is
indexed, with no repair."""

from __future__ import annotations

import errno
import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.pipeline import build_pipeline
from tests.conftest import make_settings
from tests.jobs.helpers import points_per_page

DOCLING = Path(__file__).resolve().parents[3] / "shared/corpus/docling/pdf"
QUERY = {"query": "table of contents and the page layout", "spaces": ["bm25", "text"], "top_k": 10}


@pytest.fixture()
def small_disk(tmp_path: Path):
    disk = tmp_path / "disk"
    disk.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"a size-limited filesystem cannot be mounted here (needs root): {made.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """A file taking the disk's free space until ``leave`` bytes are left (0: until writes fail)."""
    filler = disk / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("ab") as f:
        while (room := shutil.disk_usage(disk).free - leave) > 0:
            try:
                f.write(chunk[:room])
                f.flush()
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


def _upload(client: TestClient, corpus: str, name: str):
    data = (DOCLING / name).read_bytes()
    return client.post(f"/corpora/{corpus}/documents", files=[("files", (name, data))], params={"wait": "true"})


def _ranking(client: TestClient, corpus: str) -> list[tuple[str, float]]:
    hits = client.post(f"/corpora/{corpus}/search", json=QUERY).json()["results"]
    return [(h["page_id"], round(h["score"], 6)) for h in hits]


def test_a_full_disk_is_a_507_naming_the_cause_and_the_service_recovers(small_disk, minilm):
    settings = make_settings(small_disk / "data")
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    try:
        with TestClient(create_app(settings, pipeline)) as client:
            for corpus in ("kept", "new"):
                assert client.post("/corpora", json={"name": corpus, "config": {"spaces": ["bm25", "text"]}}
                                   ).status_code == 201
            for name in ("multi_page.pdf", "normal_4pages.pdf"):
                assert _upload(client, "kept", name).status_code == 201
            ranking, listing = _ranking(client, "kept"), client.get("/corpora/kept/documents").json()
            assert ranking

            filler = fill(small_disk)  # no room at all: the upload's bytes cannot be spooled
            full = _upload(client, "new", "code_and_formula.pdf")
            assert full.status_code == 507, full.text
            assert full.json()["error"] == "no_space"
            assert "no space left on the data folder's disk" in full.json()["message"]

            filler.unlink()  # room for the upload's bytes, not for its pages, vectors and catalog rows
            fill(small_disk, leave=(DOCLING / "redp5110_sampled.pdf").stat().st_size + 96 * 1024)
            late = _upload(client, "new", "redp5110_sampled.pdf")
            assert late.status_code == 507, late.text
            error = late.json()["errors"][0]
            assert error["error"] == "no_space" and "no space left on the data folder's disk" in error["message"]
            assert late.json()["job"]["state"] == "failed"

            assert _ranking(client, "kept") == ranking  # the corpus indexed before: whole, the same answers
            assert client.get("/corpora/kept/documents").json() == listing

            filler.unlink()  # space returns: the same upload is indexed, nothing repaired by hand
            again = _upload(client, "new", "redp5110_sampled.pdf")
            assert again.status_code == 201, again.text
            assert _ranking(client, "kept") == ranking and _ranking(client, "new")
            for corpus in ("kept", "new"):
                pages = {(d["id"], p["number"]) for d in client.get(f"/corpora/{corpus}/documents").json()
                         for p in client.get(f"/corpora/{corpus}/documents/{d['id']}").json()["pages"]}
                counts = points_per_page(pipeline.store, corpus)
                assert set(counts) == pages and set(counts.values()) == {1}, corpus
            assert not list((small_disk / "data").rglob("*.tmp")), "a partial file was left behind"
    finally:
        pipeline.close()


def test_a_failure_the_full_disk_kept_from_being_recorded_ends_the_job_once_there_is_room(small_disk, minilm):
    """A file fails (an encrypted PDF) while the disk is full, and recording that failure fails too (the
    store's flush of the dropped points): the job is not left running: its failure is recorded again later
    and, once space returns, the job ends, failed with the file's reason."""
    from mmrag.config import CorpusConfig
    from mmrag.jobs.runner import LocalRunner
    from mmrag.jobs.writer import Upload
    from tests.jobs.helpers import encrypted_pdf, wait_until

    settings = make_settings(small_disk / "data")
    settings.jobs.retry_backoff_s = 0.2
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    try:
        pipeline.corpora.create_corpus("c", CorpusConfig(spaces=["bm25", "text"]))
        runner = pipeline.runner
        assert isinstance(runner, LocalRunner)
        job_id, work = pipeline.job_writer.submit("c", [Upload("locked.pdf", encrypted_pdf(), {})])
        filler = fill(small_disk)  # no room: the plan's failure, then recording it, meet the full disk
        runner.send(work)
        assert wait_until(lambda: runner.later.waiting() > 0, timeout=120)
        assert not pipeline.jobs.status(job_id).finished
        filler.unlink()
        job = wait_until(lambda: (j := pipeline.jobs.status(job_id)).finished and j, timeout=120)
        assert job.state.value == "failed", job.summary()
        error = job.files[0]
        assert error.error in ("corrupt_document", "no_space") and error.message, job.summary()
        assert not points_per_page(pipeline.store, "c")
    finally:
        pipeline.close()
