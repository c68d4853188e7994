"""Health and metrics: liveness, readiness, which spaces can serve, and the counters (Prometheus or JSON)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from api.health_schemas import HealthOut, LiveOut, ReadyOut
from api.observability import CONTENT_TYPE, readiness
from mmrag import __version__
from mmrag.ingest.convert.sandbox import isolation_state

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthOut)
def health(request: Request) -> HealthOut:
    """Liveness plus which spaces can serve, why any is off (one line each, and in full), and how converters
    are isolated."""
    info = request.app.state.application.health()
    isolation = isolation_state(request.app.state.settings.ingest.convert_isolation).as_dict()
    return HealthOut(status="ok", version=__version__, **info, convert_isolation=isolation)


@router.get("/health/live", response_model=LiveOut)
def live() -> LiveOut:
    """The process answers (for a liveness probe: restart it if this fails)."""
    return LiveOut(status="ok")


@router.get("/health/ready", response_model=ReadyOut,
            responses={503: {"model": ReadyOut, "description": "A dependency does not answer"}})
def ready(request: Request) -> Response:
    """Whether the store, the broker (when configured) and the embedding service (when configured)
    answer: 200, else 503 with the failing checks (for a readiness probe: send no traffic)."""
    checks = readiness(request.app.state)
    ok = all(v == "ok" for v in checks.values())
    body = ReadyOut(status="ok" if ok else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE: {}, "application/json": {}}}})
def metrics(request: Request, format: Literal["prometheus", "json"] = "prometheus") -> Response:
    """Prometheus text: requests and latency per route and status, pipeline stage timings, jobs by
    state, queue depths, encoder cache, VLM admission. ``?format=json``: the VLM engine counters and
    which spaces are on, as JSON."""
    if format == "prometheus":
        return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE)
    pipeline = request.app.state.pipeline
    engine = pipeline.answers.engine
    return JSONResponse({"vlm": engine.stats() if engine is not None else None, "spaces": pipeline.space_names(),
                         "unavailable": dict(pipeline.unavailable)})
