"""Evaluation jobs over REST: start a shipped suite, follow progress, fetch the report."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, status
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field

from api.errors import responses
from mmrag.evaluate.service import EvalJob, EvaluationService

router = APIRouter(prefix="/evaluations", tags=["evaluations"])


def get_service(request: Request) -> EvaluationService:
    service: EvaluationService = request.app.state.evaluations
    return service


ServiceDep = Annotated[EvaluationService, Depends(get_service)]


class EvaluationIn(BaseModel):
    suite: str = Field(..., description="Name of a suite folder under eval/suites (GET /evaluations/suites)")
    variant: str | None = Field(None, description="A named variant of the suite (e.g. bm25, dense)")


class EvaluationOut(BaseModel):
    id: str
    suite: str
    variant: str | None
    state: str = Field(..., description="queued | running | done | failed")
    stage: str
    done: int
    total: int
    message: str
    error: str
    metrics: dict[str, float]
    created_at: float
    finished_at: float | None
    report_url: str


def _out(job: EvalJob) -> EvaluationOut:
    return EvaluationOut(**asdict(job), report_url=f"/evaluations/{job.id}/report")


@router.get("/suites", response_model=list[str])
def list_suites(service: ServiceDep) -> list[str]:
    return service.suites()


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluationOut,
             responses=responses(400, 404, 422))
def start_evaluation(body: EvaluationIn, service: ServiceDep) -> EvaluationOut:
    """Start an evaluation job (runs in the background; one at a time)."""
    return _out(service.start(body.suite, body.variant))


@router.get("", response_model=list[EvaluationOut])
def list_evaluations(service: ServiceDep) -> list[EvaluationOut]:
    return [_out(j) for j in service.list()]


@router.get("/{job_id}", response_model=EvaluationOut, responses=responses(404))
def get_evaluation(job_id: str, service: ServiceDep) -> EvaluationOut:
    return _out(service.get(job_id))


@router.get("/{job_id}/report", responses=responses(404, 409))
def get_report(job_id: str, service: ServiceDep) -> dict[str, Any]:
    """report.json of a finished run (409 while it runs)."""
    return service.report(job_id)


@router.get("/{job_id}/files/{name:path}", responses=responses(404, 409), response_class=FileResponse)
def get_artefact(job_id: str, name: str, service: ServiceDep) -> FileResponse:
    """report.md, queries.jsonl, plots/*.png of a finished run."""
    return FileResponse(service.artefact(job_id, name))
