"""submit_uploads: the refused files come back typed and in order, the rest become one job; the waits."""

from __future__ import annotations

import pytest

from mmrag.embed.base import load_embedder
from mmrag.errors import InvalidInput, TooLarge, Unavailable
from mmrag.jobs.model import FileState, JobState
from mmrag.jobs.uploads import Refusal, read_files, submit_uploads, upload_check
from mmrag.jobs.wait import JobWatch, wait_job
from mmrag.pipeline import build_pipeline
from tests.jobs.helpers import text_pdf


@pytest.fixture()
def fake_pipeline(settings):
    settings.embed.text_model = "fake:384"
    settings.ingest.max_upload_bytes = 20_000
    p = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    p.corpora.create_corpus("c")
    yield p
    p.close()


def test_refusals_are_collected_in_order_and_the_rest_is_one_job(fake_pipeline, tmp_path):
    p = fake_pipeline
    big = text_pdf("big", 1) + b"%" * 20_001
    (tmp_path / "b.pdf").write_bytes(text_pdf("second file", 2))
    unread = Refusal("unread.pdf", TooLarge("unread.pdf is larger than the limit"))
    files = [("a.pdf", text_pdf("first file", 1)), ("empty.pdf", b""), unread, *read_files([tmp_path / "b.pdf"]),
             ("big.pdf", big), ("junk.bin", b"\x00\x01\x02 not a document \xff" * 10)]
    meta = {"team": "red"}
    submitted = submit_uploads(p.runner, "c", files, meta, upload_check(p.settings.ingest))
    assert [(r.filename, r.code) for r in submitted.refused] == [
        ("empty.pdf", "invalid_input"), ("unread.pdf", "too_large"), ("big.pdf", "too_large"),
        ("junk.bin", "unsupported_media_type")]
    assert submitted.refused[1] is unread
    assert "empty" in submitted.refused[0].message and "20,000" in submitted.refused[2].message
    assert submitted.job_id is not None
    seen: list[JobState] = []
    job = wait_job(p.jobs, submitted.job_id, lambda j: seen.append(j.state))
    assert [f.filename for f in job.files] == ["a.pdf", "b.pdf"]
    assert [f.state for f in job.files] == [FileState.DONE, FileState.DONE] and job.state == JobState.DONE
    assert seen[-1] == JobState.DONE
    docs = {d.filename: d for d in p.catalog.documents.listed("c")}
    assert set(docs) == {"a.pdf", "b.pdf"} and docs["b.pdf"].page_count == 2
    assert docs["a.pdf"].metadata["team"] == docs["b.pdf"].metadata["team"] == "red" and meta == {"team": "red"}


def test_every_file_refused_starts_no_job(fake_pipeline):
    p = fake_pipeline
    submitted = submit_uploads(p.runner, "c", [("empty.pdf", b"")], {}, upload_check(p.settings.ingest))
    assert submitted.job_id is None and [r.code for r in submitted.refused] == ["invalid_input"]
    assert p.jobs.list_jobs("c") == []


def test_strict_raises_the_first_refusal_before_any_job(fake_pipeline):
    p = fake_pipeline
    files = [("a.pdf", text_pdf("fine", 1)), ("big.pdf", b"%PDF" + b"%" * 20_001), ("empty.pdf", b"")]
    with pytest.raises(TooLarge, match=r"big\.pdf"):
        submit_uploads(p.runner, "c", files, {}, upload_check(p.settings.ingest), strict=True)
    assert p.jobs.list_jobs("c") == []
    with pytest.raises(InvalidInput, match="empty"):
        p.ingest.file_bytes("c", b"", "empty.pdf")


def test_the_watch_tells_changes_once_and_gives_up_after_its_timeout():
    told: list[str] = []
    watch: JobWatch[dict[str, str]] = JobWatch("j1", lambda j: j["state"], progress=lambda j: told.append(j["state"]))
    assert not watch.finished({"state": "queued"})
    assert not watch.finished({"state": "queued"})
    assert not watch.finished({"state": "running"})
    assert watch.finished({"state": "done"})
    assert told == ["queued", "running", "done"]
    late: JobWatch[dict[str, str]] = JobWatch("j2", lambda j: j["state"], timeout_s=0.0)
    assert late.finished({"state": "cancelled"})
    with pytest.raises(Unavailable, match=r"job j2 has not finished after 0s \(state running\)"):
        late.finished({"state": "running"})
