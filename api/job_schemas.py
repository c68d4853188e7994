"""Request/response models of jobs (upload creates one; progress, listing, cancel, events)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from api.schemas import DocumentOut, FileError
from mmrag.jobs.model import JobStatus

JobStateName = Literal["queued", "running", "done", "failed", "cancelled"]
FileStateName = Literal["queued", "running", "done", "exists", "failed", "cancelled"]


class JobFileOut(BaseModel):
    index: int
    filename: str
    document_id: str
    state: FileStateName
    pages: int = Field(description="Pages of the file (0 until it is planned)")
    pages_done: int
    error: str | None = Field(None, description="Stable error code when the file failed")
    message: str | None = Field(None, description="Why the file failed")


class JobOut(BaseModel):
    id: str
    corpus: str
    state: JobStateName
    pages_total: int
    pages_done: int
    pages_failed: int
    files: list[JobFileOut]
    errors: list[FileError] = Field(description="One entry per failed file, with its reason")
    timings: dict[str, float] = Field(description="Seconds per stage, summed over batches (plan, parse, embed, write)")
    created_at: float
    updated_at: float
    finished_at: float | None
    events_url: str


class JobUploadOut(BaseModel):
    """An upload: the job indexing the accepted files, files rejected before it started, and (with
    ``wait=true``) the documents once the job finished."""

    job: JobOut | None
    documents: list[DocumentOut] = []
    errors: list[FileError] = []


def job_out(job: JobStatus, base: str = "") -> JobOut:
    files = [JobFileOut(index=f.index, filename=f.filename, document_id=f.document_id, state=f.state.value,
                        pages=f.pages, pages_done=f.pages_done, error=f.error, message=f.message)
             for f in job.files]
    errors = [FileError(filename=f.filename, error=f.error or "error", message=f.message or "")
              for f in job.files if f.error]
    return JobOut(id=job.id, corpus=job.corpus, state=job.state.value, pages_total=job.pages_total,
                  pages_done=job.pages_done, pages_failed=job.pages_failed, files=files, errors=errors,
                  timings={k: round(v, 4) for k, v in job.timings.items()}, created_at=job.created_at,
                  updated_at=job.updated_at, finished_at=job.finished_at, events_url=f"{base}/jobs/{job.id}/events")
