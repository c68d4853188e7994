"""Evaluation jobs over REST: start a shipped suite, follow progress, fetch the report."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, status
from fastapi.responses import FileResponse

from api.deps import ApplicationDep, GateDep, PrincipalDep, ServiceDep
from api.errors import responses
from api.schemas import CompareIn, CompareOut, EvaluationIn, EvaluationOut
from mmrag.access import Principal
from mmrag.application import Application
from mmrag.errors import Forbidden, NotFound
from mmrag.evaluate.service import EvalJob, EvaluationService

router = APIRouter(prefix="/evaluations", tags=["evaluations"])


def _out(job: EvalJob) -> EvaluationOut:
    return EvaluationOut(**asdict(job), report_url=f"/evaluations/{job.id}/report")


@router.get("/suites", response_model=list[str])
def list_suites(service: ServiceDep, _: PrincipalDep) -> list[str]:
    return service.suites()


def corpus_exists(application: Application, corpus: str) -> bool:
    try:
        application.corpus(corpus)
    except NotFound:
        return False
    return True


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=EvaluationOut,
             responses=responses(400, 404, 422, 503))
def start_evaluation(body: EvaluationIn, service: ServiceDep, application: ApplicationDep, gate: GateDep,
                     principal: PrincipalDep) -> EvaluationOut:
    """Start an evaluation job (runs in the background; one at a time). Needs write on the suite's corpus;
    a suite whose corpus does not exist yet needs an admin key (a write key never creates a corpus). At
    most MMRAG_API__MAX_EVALUATIONS_PER_KEY unfinished evaluations per key (429)."""

    def allow(corpus: str) -> None:
        principal.check("write", corpus, f"unknown suite {body.suite!r}")
        if principal.key is not None and principal.key.scope != "admin" and not corpus_exists(application, corpus):
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
