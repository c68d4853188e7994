"""FastAPI dependencies as Annotated aliases: the app's objects and the request's key (:mod:`api.auth`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.auth import AuthGate, get_gate, require
from mmrag.access import Principal
from mmrag.evaluate.ranker_training import RankerTraining
from mmrag.evaluate.service import EvaluationService
from mmrag.local_application import LocalApplication


def get_application(request: Request) -> LocalApplication:
    """The app's application (:mod:`mmrag.application`); a route takes the request key's view of it
    (``application.as_principal(principal)``)."""
    application: LocalApplication = request.app.state.application
    return application


ApplicationDep = Annotated[LocalApplication, Depends(get_application)]


def get_evaluations(request: Request) -> EvaluationService:
    service: EvaluationService = request.app.state.evaluations
    return service


def get_rankers(request: Request) -> RankerTraining:
    rankers: RankerTraining = request.app.state.rankers
    return rankers


ServiceDep = Annotated[EvaluationService, Depends(get_evaluations)]
RankersDep = Annotated[RankerTraining, Depends(get_rankers)]

GateDep = Annotated[AuthGate, Depends(get_gate)]
PrincipalDep = Annotated[Principal, require(None)]  # any valid key; the route checks the object's corpus
ReadDep = Annotated[Principal, require("read")]
WriteDep = Annotated[Principal, require("write")]
AdminDep = Annotated[Principal, require("admin")]
