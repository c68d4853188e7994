"""Jobs: get one, list a corpus's, cancel, and a server-sent-events stream of progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.deps import PipelineDep, PrincipalDep, ReadDep, RunnerDep, StoreDep
from api.errors import responses
from api.schemas import FileError, JobFileOut, JobOut
from api.sse import SSE_HEADERS, sse_event
from mmrag.access import Principal
from mmrag.jobs.model import JobStatus
from mmrag.jobs.state import JobStore
from mmrag.keys import Scope

router = APIRouter(tags=["jobs"])


def base_url(request: Request) -> str:
    return str(request.app.state.settings.api.public_url.rstrip("/"))


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


def visible_job(jobs: JobStore, job_id: str, principal: Principal, scope: Scope = "read") -> JobStatus:
    """The job, if the key may act with ``scope`` on its corpus; another tenant's job is unknown (404)."""
    job = jobs.status(job_id)
    principal.check(scope, job.corpus, f"unknown job {job_id!r}")
    return job


@router.get("/jobs/{job_id}", response_model=JobOut, responses=responses(404))
def get_job(job_id: str, request: Request, jobs: StoreDep, principal: PrincipalDep) -> JobOut:
    """State and progress of a job: pages total/done/failed, each file's state and error, stage timings."""
    return job_out(visible_job(jobs, job_id, principal), base_url(request))


@router.get("/corpora/{corpus}/jobs", response_model=list[JobOut], responses=responses(404))
def list_jobs(corpus: str, request: Request, pipeline: PipelineDep, jobs: StoreDep, _: ReadDep,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[JobOut]:
    """Jobs of a corpus, newest first."""
    pipeline.corpora.config(corpus)
    return [job_out(j, base_url(request)) for j in jobs.list_jobs(corpus, limit)]


@router.post("/jobs/{job_id}/cancel", response_model=JobOut, responses=responses(404, 507))
async def cancel_job(job_id: str, request: Request, runner: RunnerDep, jobs: StoreDep,
                     principal: PrincipalDep) -> JobOut:
    """Stop a job. Files already indexed stay; unfinished ones leave nothing behind. Finished jobs are unchanged."""
    visible_job(jobs, job_id, principal, "write")
    return job_out(await run_in_threadpool(runner.cancel, job_id), base_url(request))


@router.get("/jobs/{job_id}/events", responses={**responses(404), 200: {"content": {"text/event-stream": {}}}},
            response_class=StreamingResponse)
async def job_events(job_id: str, request: Request, jobs: StoreDep, principal: PrincipalDep,
                     interval: Annotated[float, Query(ge=0.05, le=10)] = 0.5) -> StreamingResponse:
    """Server-sent events: a ``progress`` event (the job as JSON) whenever it changes, then ``end``."""
    visible_job(jobs, job_id, principal)  # 404 before the stream starts
    base = base_url(request)

    async def stream() -> AsyncIterator[str]:
        last: dict[str, object] | None = None
        while not await request.is_disconnected():
            job = await run_in_threadpool(jobs.status, job_id)
            body = job_out(job, base).model_dump()
            if body != last:
                yield sse_event("progress", body)
                last = body
            if job.finished:
                yield sse_event("end", {"state": job.state.value})
                return
            await asyncio.sleep(interval)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)
