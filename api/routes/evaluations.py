"""Evaluation jobs over REST: start a shipped suite, follow progress, fetch the report."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, status
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field

from api.auth import GateDep, Principal, PrincipalDep
from api.deps import PipelineDep
from api.errors import responses
from mmrag.errors import Forbidden
from mmrag.evaluate.service import EvalJob, EvaluationService

router = APIRouter(prefix="/evaluations", tags=["evaluations"])


def get_service(pipeline: PipelineDep) -> EvaluationService:
    return pipeline.evaluations


ServiceDep = Annotated[EvaluationService, Depends(get_service)]


class EvaluationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown fields are refused (additionalProperties: false)

    suite: str = Field(..., min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                       description="Name of a suite folder under eval/suites (GET /evaluations/suites)")
    variant: str | None = Field(None, min_length=1, max_length=100,
                                description="A named variant of the suite (e.g. bm25, dense)")


class EvaluationOut(BaseModel):
    id: str
    suite: str
    variant: str | None
    corpus: str = Field(..., description="The corpus the suite ingests into and searches")
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


class CompareIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    baseline: str = Field(..., min_length=1, max_length=64,
                          description="Id of the run to compare against (A); the run of the path is B")


class ComparedRun(BaseModel):
    id: str
    label: str = Field(..., description="The run and the spaces it searched")
    config: dict[str, Any] = Field(..., description="The run's configuration, as in its report")


class MetricComparison(BaseModel):
    mean_a: float
    mean_b: float
    delta: float = Field(..., description="mean(B - A) over the queries both runs scored")
    ci_low: float = Field(..., description="Lower bound of the paired bootstrap interval of delta")
    ci_high: float = Field(..., description="Upper bound of the paired bootstrap interval of delta")
    p_value: float = Field(..., description="Two-sided paired randomisation (sign-flip) test")
    n: int = Field(..., description="Paired queries")


class CompareOut(BaseModel):
    kind: str = Field("compare")
    schema_version: int
    suite: str
    a: ComparedRun
    b: ComparedRun
    paired_items: int
    only_in_a: list[str]
    only_in_b: list[str]
    statistics: dict[str, Any] = Field(..., description="Bootstrap samples, confidence, seed and the test used")
    metrics: dict[str, MetricComparison] = Field(..., description="Metric name -> B against A")


def _out(job: EvalJob) -> EvaluationOut:
    return EvaluationOut(**asdict(job), report_url=f"/evaluations/{job.id}/report")


@router.get("/suites", response_model=list[str])
def list_suites(service: ServiceDep, _: PrincipalDep) -> list[str]:
    return service.suites()


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluationOut,
             responses=responses(400, 404, 422))
def start_evaluation(body: EvaluationIn, service: ServiceDep, pipeline: PipelineDep, gate: GateDep,
                     principal: PrincipalDep) -> EvaluationOut:
    """Start an evaluation job (runs in the background; one at a time). Needs write on the suite's corpus;
    a suite whose corpus does not exist yet needs an admin key (a write key never creates a corpus). At
    most MMRAG_API__MAX_EVALUATIONS_PER_KEY unfinished evaluations per key (429)."""

    def allow(corpus: str) -> None:
        principal.check("write", corpus, f"unknown suite {body.suite!r}")
        if principal.key is not None and principal.key.scope != "admin" and not pipeline.catalog.has_corpus(corpus):
            raise Forbidden(f"the suite's corpus {corpus!r} does not exist, and a {principal.key.scope} key never "
                            "creates one: create it with an admin key first")
        if principal.key is not None:
            gate.evaluations.check(principal.id, lambda job_id: service.get(job_id).state in ("done", "failed"))

    job = service.start(body.suite, body.variant, allow=allow)
    if principal.key is not None:
        gate.evaluations.add(principal.id, job.id)
    return _out(job)


@router.get("", response_model=list[EvaluationOut])
def list_evaluations(service: ServiceDep, principal: PrincipalDep) -> list[EvaluationOut]:
    """The evaluations of corpora this key may read."""
    return [_out(j) for j in service.list() if principal.sees(j.corpus)]


def visible(service: EvaluationService, job_id: str, principal: Principal) -> EvalJob:
    """The evaluation, if the key may read its corpus; another tenant's is unknown (404)."""
    job = service.get(job_id)
    principal.check("read", job.corpus, f"unknown evaluation {job_id!r}")
    return job


@router.get("/{job_id}", response_model=EvaluationOut, responses=responses(404))
def get_evaluation(job_id: str, service: ServiceDep, principal: PrincipalDep) -> EvaluationOut:
    return _out(visible(service, job_id, principal))


@router.get("/{job_id}/report", responses=responses(404, 409))
def get_report(job_id: str, service: ServiceDep, principal: PrincipalDep) -> dict[str, Any]:
    """report.json of a finished run (409 while it runs)."""
    visible(service, job_id, principal)
    return service.report(job_id)


@router.get("/{job_id}/files/{name:path}", responses=responses(404, 409), response_class=FileResponse)
def get_artefact(job_id: str, name: str, service: ServiceDep, principal: PrincipalDep) -> FileResponse:
    """report.md, queries.jsonl, plots/*.png of a finished run."""
    visible(service, job_id, principal)
    return FileResponse(service.artefact(job_id, name))


@router.post("/{job_id}/compare", response_model=CompareOut, responses=responses(400, 404, 409, 422))
def compare_evaluations(job_id: str, body: CompareIn, service: ServiceDep, principal: PrincipalDep) -> CompareOut:
    """Compare this finished run (B) with a baseline run (A) of the same suite: what ``mmrag eval compare A B``
    computes, per metric the means, their paired difference B − A with a bootstrap interval and a
    permutation p-value. Both runs must be readable with the key; 409 while one runs, 400 for runs of
    different datasets or a run compared with itself."""
    for run in (body.baseline, job_id):
        visible(service, run, principal)
    return CompareOut.model_validate(service.compare(body.baseline, job_id))
