"""Jobs: get one, list a corpus's, cancel, and a server-sent-events stream of progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.auth import Principal, PrincipalDep, ReadDep
from api.deps import PipelineDep
from api.errors import responses
from api.job_schemas import JobOut, job_out
from api.sse import SSE_HEADERS, sse_event
from mmrag.jobs.model import JobStatus
from mmrag.jobs.runner import JobRunner
from mmrag.jobs.state import JobStore
from mmrag.keys import Scope

router = APIRouter(tags=["jobs"])


def get_runner(pipeline: PipelineDep) -> JobRunner:
    return pipeline.runner


RunnerDep = Annotated[JobRunner, Depends(get_runner)]


def _store(pipeline: PipelineDep) -> JobStore:
    return pipeline.jobs


StoreDep = Annotated[JobStore, Depends(_store)]


def base_url(request: Request) -> str:
    return str(request.app.state.settings.api.public_url.rstrip("/"))


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
    pipeline.catalog.corpus_config(corpus)
    return [job_out(j, base_url(request)) for j in jobs.list_jobs(corpus, limit)]


@router.post("/jobs/{job_id}/cancel", response_model=JobOut, responses=responses(404))
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
