"""Jobs: get one, list a corpus's, cancel, and a server-sent-events stream of progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.deps import ApplicationDep, PrincipalDep, ReadDep
from api.errors import responses
from api.schemas import JobOut
from api.sse import SSE_HEADERS, sse_event
from mmrag.jobs.model import FINISHED_JOB

router = APIRouter(tags=["jobs"])
FINISHED_STATES = frozenset(state.value for state in FINISHED_JOB)


@router.get("/jobs/{job_id}", response_model=JobOut, responses=responses(404))
def get_job(job_id: str, application: ApplicationDep, principal: PrincipalDep) -> JobOut:
    """State and progress of a job: pages total/done/failed, each file's state and error, stage timings."""
    return JobOut.model_validate(application.as_principal(principal).job(job_id))


@router.get("/corpora/{corpus}/jobs", response_model=list[JobOut], responses=responses(404))
def list_jobs(corpus: str, application: ApplicationDep, principal: ReadDep,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[JobOut]:
    """Jobs of a corpus, newest first."""
    return [JobOut.model_validate(j) for j in application.as_principal(principal).jobs(corpus, limit)]


@router.post("/jobs/{job_id}/cancel", response_model=JobOut, responses=responses(404, 507))
async def cancel_job(job_id: str, application: ApplicationDep, principal: PrincipalDep) -> JobOut:
    """Stop a job. Files already indexed stay; unfinished ones leave nothing behind. Finished jobs are unchanged."""
    return JobOut.model_validate(await run_in_threadpool(application.as_principal(principal).cancel_job, job_id))


@router.get("/jobs/{job_id}/events", responses={**responses(404), 200: {"content": {"text/event-stream": {}}}},
            response_class=StreamingResponse)
async def job_events(job_id: str, request: Request, application: ApplicationDep, principal: PrincipalDep,
                     interval: Annotated[float, Query(ge=0.05, le=10)] = 0.5) -> StreamingResponse:
    """Server-sent events: a ``progress`` event (the job as JSON) whenever it changes, then ``end``."""
    mine = application.as_principal(principal)
    mine.job(job_id)  # 404 before the stream starts

    async def stream() -> AsyncIterator[str]:
        last: dict[str, object] | None = None
        while not await request.is_disconnected():
            body = JobOut.model_validate(await run_in_threadpool(mine.job, job_id)).model_dump()
            if body != last:
                yield sse_event("progress", body)
                last = body
            if body["state"] in FINISHED_STATES:
                yield sse_event("end", {"state": body["state"]})
                return
            await asyncio.sleep(interval)

    return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)
