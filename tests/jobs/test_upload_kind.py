"""A file's kind is decided once: by the upload checks (``check_uploaded_file``), carried in the spooled
manifest and source, and read, not sniffed again, by the plan and parse stages."""

from __future__ import annotations

import pytest

from mmrag.ingest import sniff, source
from mmrag.jobs import writer
from mmrag.jobs.uploads import check_uploaded_file
from mmrag.jobs.writer import Upload
from tests.jobs.helpers import text_pdf, wait_until


@pytest.fixture()
def sniffs(monkeypatch):
    """Every call of sniff_kind, wherever the job system imported it."""
    calls: list[str] = []

    def counted(data: bytes, filename: str = "") -> sniff.Kind:
        calls.append(filename)
        return sniff.sniff_kind(data, filename)

    for module in (source, writer):
        monkeypatch.setattr(module, "sniff_kind", counted)
    return calls


def test_an_upload_is_sniffed_once_from_upload_to_index(fake_pipeline, sniffs):
    p = fake_pipeline
    data = text_pdf("kind once", 5)
    kind = check_uploaded_file(data, "five.pdf", p.settings.ingest.max_upload_bytes, p.settings.ingest)
    assert kind.name == "pdf" and sniffs == ["five.pdf"]
    job_id = p.runner.submit("c", [Upload("five.pdf", data, {}, kind.name)])
    job = wait_until(lambda: (j := p.jobs.status(job_id)).finished and j)
    assert [(f.state.value, f.pages) for f in job.files] == [("done", 5)]
    assert sniffs == ["five.pdf"]  # plan and three parse batches read the kind
    assert [d.media_type for d in p.catalog.documents.listed("c")] == ["application/pdf"]


def test_an_upload_without_a_kind_is_sniffed_and_checked_at_plan(fake_pipeline, sniffs):
    p = fake_pipeline
    job_id = p.runner.submit("c", [Upload("one.pdf", text_pdf("no kind", 1), {}),
                                   Upload("bad.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, {})])
    job = wait_until(lambda: (j := p.jobs.status(job_id)).finished and j)
    assert {f.filename: f.state.value for f in job.files} == {"one.pdf": "done", "bad.png": "failed"}
    assert sorted(sniffs) == ["bad.png", "bad.png", "one.pdf", "one.pdf"]  # with_attachments and plan
    assert job.files[1].error == "corrupt_document" and "image" in (job.files[1].message or "")
