"""The embedded runner in-process: batches, bad files reported per file, resume after a stop, cancel."""

from __future__ import annotations

import pytest

from mmrag.config import CorpusConfig
from mmrag.embed.base import load_embedder
from mmrag.jobs.model import Failed, FileState, JobState, Work
from mmrag.jobs.stages import run_stage
from mmrag.jobs.writer import Upload
from mmrag.pipeline import build_pipeline
from tests.jobs.helpers import encrypted_pdf, points_per_page, text_pdf, wait_until


def _finished(p, job_id):
    job = p.jobs.status(job_id)
    return job if job.finished else None


def test_mixed_job_indexes_good_files_and_reports_bad_ones(fake_pipeline, corpus_dir):
    p = fake_pipeline
    amt = (corpus_dir / "pdf" / "multi_page.pdf").read_bytes()
    uploads = [Upload("multi.pdf", amt, {"team": "a"}), Upload("five.pdf", text_pdf("five", 5), {}),
               Upload("locked.pdf", encrypted_pdf(), {}), Upload("cut.pdf", amt[: len(amt) // 2], {}),
               Upload("bad.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, {})]
    job_id = p.runner.submit("c", uploads)
    job = wait_until(lambda: _finished(p, job_id), timeout=60)
    states = {f.filename: (f.state, f.error) for f in job.files}
    assert states["multi.pdf"][0] in (FileState.DONE, FileState.EXISTS)
    assert states["five.pdf"][0] in (FileState.DONE, FileState.EXISTS)
    assert states["locked.pdf"] == (FileState.FAILED, "corrupt_document")
    assert states["cut.pdf"] == (FileState.FAILED, "corrupt_document")
    messages = {f.filename: (f.message or "").lower() for f in job.files}
    assert "encrypted" in messages["locked.pdf"]
    assert states["bad.png"][0] == FileState.FAILED and "image" in messages["bad.png"], messages["bad.png"]
    assert job.state == JobState.DONE
    counts = points_per_page(p.store, "c")
    docs = {d.filename: d for d in p.catalog.documents.listed("c")}
    assert set(docs) == {"multi.pdf", "five.pdf"} and docs["five.pdf"].page_count == 5
    assert len(counts) == sum(d.page_count for d in docs.values()) and set(counts.values()) == {1}
    # the writer marks the job finished, then drops its spool (in that order, so a crash between the two
    # resumes nothing): a waiter may see the job finished a moment before its spool is gone
    assert wait_until(lambda: not list((p.job_writer.spool.root / "jobs").iterdir()), timeout=10)


class FlakyEmbedder:
    """The fake embedder behind an embedding service that is unavailable for the first ``failures`` calls."""

    def __init__(self, failures: int) -> None:
        self.inner, self.failures, self.calls = load_embedder("fake:384"), failures, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_many(self, items, kind="document"):
        self.calls += 1
        if self.calls <= self.failures:
            from mmrag.errors import Unavailable

            raise Unavailable("embedding service is restarting")
        return self.inner.embed_many(items, kind)


@pytest.mark.parametrize("failures,state", [(2, FileState.DONE), (99, FileState.FAILED)])
def test_transient_errors_retry_with_backoff_then_fail_the_file(settings, failures, state):
    settings.jobs.retry_backoff_s, settings.jobs.max_retries = 0.05, 3
    flaky = FlakyEmbedder(failures)
    p = build_pipeline(settings, embedders={"text": flaky})  # type: ignore[dict-item]
    p.corpora.create_corpus("c", CorpusConfig(spaces=["text", "bm25"]))  # one embedding call per try
    try:
        job_id = p.runner.submit("c", [Upload("a.pdf", text_pdf("flaky", 1), {})])
        job = wait_until(lambda: _finished(p, job_id), timeout=60)
    finally:
        p.close()
    assert job.files[0].state == state
    if state == FileState.FAILED:
        assert job.files[0].error == "unavailable" and "gave up after retries" in job.files[0].message
        assert flaky.calls == 4  # 1 try + 3 retries
    else:
        assert flaky.calls == 3


def test_a_job_queues_its_files_plans_a_few_at_a_time(settings):
    """``plan_ahead`` files of a job are planned at once; each one's plan, when it ends, queues the next
    (so a job of many files does not fill the cpu queue ahead of other jobs, on Celery too)."""
    settings.embed.text_model = "fake:384"
    settings.jobs.plan_ahead = 2
    p = build_pipeline(settings, embedders={"text": load_embedder("fake:384")}, run_jobs=False)
    try:
        p.corpora.create_corpus("c")
        job_id, first = p.job_writer.submit("c", [Upload(f"{i}.pdf", text_pdf(f"file {i}"), {}) for i in range(5)])
        assert [w.file for w in first] == [0, 1]
        ctx = p.stage_context()
        commit, *_ = run_stage(ctx, first[1])
        assert [(w.stage, w.file) for w in p.job_writer.handle(commit)] == [("plan", 3)]
        failed = Work("commit", job_id, 0, -1, Failed("corrupt_document", "bad"))
        assert [(w.stage, w.file) for w in p.job_writer.handle(failed)] == [("plan", 2)]
        assert [w.file for w in p.job_writer.pending_work(job_id) if w.stage == "plan"] == [2, 3]
        ctx.parser.close()
    finally:
        p.close()


def test_a_fault_in_the_owner_step_fails_the_file_and_the_job_ends(fake_pipeline, monkeypatch):
    """The document row cannot be written (a fault the stages cannot catch: it is the writer's own step):
    the file fails with the reason, its vectors go, the job ends; the next upload of it goes through."""
    p = fake_pipeline
    add = p.catalog.documents.add

    def full_disk(corpus, doc, traits=None):
        raise OSError("No space left on device")

    monkeypatch.setattr(p.catalog.documents, "add", full_disk)
    job_id = p.runner.submit("c", [Upload("five.pdf", text_pdf("five", 5), {})])
    job = wait_until(lambda: _finished(p, job_id), timeout=60)
    f = job.files[0]
    assert (f.state, f.error) == (FileState.FAILED, "no_space")  # a full disk says so (issue 42)
    assert "no space left on the data folder's disk" in (f.message or "") and job.state == JobState.FAILED
    assert points_per_page(p.store, "c") == {} and p.catalog.documents.listed("c") == []
    monkeypatch.setattr(p.catalog.documents, "add", add)
    retried = p.runner.submit("c", [Upload("five.pdf", text_pdf("five", 5), {})])
    again = wait_until(lambda: _finished(p, retried), timeout=60)
    assert again.files[0].state == FileState.DONE and len(points_per_page(p.store, "c")) == 5
