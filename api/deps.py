"""FastAPI dependencies as Annotated aliases: the app's objects and the request's key (:mod:`api.auth`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.auth import AuthGate, Principal, get_gate, require
from mmrag.evaluate.service import EvaluationService
from mmrag.jobs.runner import JobRunner
from mmrag.jobs.state import JobStore
from mmrag.pipeline import Pipeline


def get_pipeline(request: Request) -> Pipeline:
    pipeline: Pipeline = request.app.state.pipeline
    return pipeline


PipelineDep = Annotated[Pipeline, Depends(get_pipeline)]


def get_runner(pipeline: PipelineDep) -> JobRunner:
    return pipeline.runner


def get_job_store(pipeline: PipelineDep) -> JobStore:
    return pipeline.jobs


def get_evaluations(pipeline: PipelineDep) -> EvaluationService:
    return pipeline.evaluations


RunnerDep = Annotated[JobRunner, Depends(get_runner)]
StoreDep = Annotated[JobStore, Depends(get_job_store)]
ServiceDep = Annotated[EvaluationService, Depends(get_evaluations)]

GateDep = Annotated[AuthGate, Depends(get_gate)]
PrincipalDep = Annotated[Principal, require(None)]  # any valid key; the route checks the object's corpus
ReadDep = Annotated[Principal, require("read")]
WriteDep = Annotated[Principal, require("write")]
AdminDep = Annotated[Principal, require("admin")]
