"""The FastAPI application: a thin shell over :mod:`mmrag.pipeline`.

``create_app(settings)`` builds the pipeline in the lifespan (start-up), never at import;
``mmrag serve`` runs it under uvicorn. ``uvicorn api.app:app_from_env --factory`` works too.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from api.auth import AuthGate
from api.contract import install_contract
from api.errors import install_error_handlers
from api.mcp_server import mount_mcp
from api.middleware import GateMiddleware, RequestMiddleware
from api.observability import CONTENT_TYPE, Metrics, configure_logging, readiness
from api.routes import answer, corpora, documents, evaluations, jobs, keys, openai_chat, ranker, search, web
from api.schemas import HealthOut, LiveOut, ReadyOut
from mmrag import __version__
from mmrag.config import Settings, load_settings
from mmrag.ingest.convert.sandbox import isolation_state
from mmrag.jobs.runner import RunnerFactory
from mmrag.pipeline import Pipeline, build_pipeline

log = logging.getLogger("mmrag.api")


def server_file(settings: Settings) -> str:
    return str(settings.data_dir / "server.json")


def create_app(settings: Settings | None = None, pipeline: Pipeline | None = None) -> FastAPI:
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.api.log_format, settings.log_level)
        app.state.pipeline = pipeline or build_pipeline(settings, runner=job_runner(settings))
        app.state.settings = settings
        app.state.auth = AuthGate(settings)
        app.state.pipeline.answers.enable()  # load the VLM at start-up: /health says whether it is on
        # the embedders of the served corpora load in the background: the first search or upload does not stall
        threading.Thread(target=app.state.pipeline.corpora.warm_up, name="mmrag-warm-up", daemon=True).start()
        marker = server_file(settings)
        url = os.environ.get("MMRAG_SERVER_URL", f"http://{settings.api.host}:{settings.api.port}")
        with open(marker, "w") as fh:
            json.dump({"pid": os.getpid(), "url": url}, fh)
        log.info("mmrag serving data folder %s; spaces %s; off: %s", settings.data_dir,
                 sorted(app.state.pipeline.spaces), app.state.pipeline.unavailable or "none")
        try:
            async with app.state.mcp.manager.run():  # the MCP endpoint's sessions live as long as the app
                yield
        finally:
            app.state.auth.close()
            if os.path.exists(marker):
                os.unlink(marker)
            if pipeline is None:
                app.state.pipeline.close()

    app = FastAPI(title="mmrag", version=__version__, lifespan=lifespan,
                  description="Multimodal RAG: upload PDFs, scans and images; search them; get answers.")
    install_error_handlers(app)
    app.state.metrics = Metrics(app.state)
    app.add_middleware(GateMiddleware, api=app, settings=settings)  # keys and body limits, before the body
    app.add_middleware(RequestMiddleware, metrics=app.state.metrics)  # outermost: request id, metrics, log
    app.include_router(keys.router)
    app.include_router(corpora.router)
    app.include_router(documents.router)
    app.include_router(search.router)
    app.include_router(jobs.router)
    app.include_router(answer.router)
    app.include_router(evaluations.router)
    app.include_router(ranker.router)
    app.include_router(openai_chat.router)
    app.include_router(web.router)
    app.state.mcp = mount_mcp(app)  # /mcp: MCP's streamable HTTP transport (not in the OpenAPI document)

    @app.get("/health", response_model=HealthOut, tags=["health"])
    def health() -> HealthOut:
        """Liveness plus which spaces are on, why any configured one is off, and how converters are isolated."""
        info = app.state.pipeline.health()
        isolation = isolation_state(settings.ingest.convert_isolation).as_dict()
        return HealthOut(status="ok", version=__version__, **info, convert_isolation=isolation)

    @app.get("/health/live", response_model=LiveOut, tags=["health"])
    def live() -> LiveOut:
        """The process answers (for a liveness probe: restart it if this fails)."""
        return LiveOut(status="ok")

    @app.get("/health/ready", response_model=ReadyOut, tags=["health"],
             responses={503: {"model": ReadyOut, "description": "A dependency does not answer"}})
    def ready() -> Response:
        """Whether the store, the broker (when configured) and the embedding service (when configured)
        answer: 200, else 503 with the failing checks (for a readiness probe: send no traffic)."""
        checks = readiness(app.state)
        ok = all(v == "ok" for v in checks.values())
        body = ReadyOut(status="ok" if ok else "unavailable", checks=checks)
        return JSONResponse(body.model_dump(), status_code=200 if ok else 503)

    @app.get("/metrics", tags=["health"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE: {}, "application/json": {}}}})
    def metrics(format: Literal["prometheus", "json"] = "prometheus") -> Response:
        """Prometheus text: requests and latency per route and status, pipeline stage timings, jobs by
        state, queue depths, encoder cache, VLM admission. ``?format=json``: the VLM engine counters and
        which spaces are on, as JSON."""
        if format == "prometheus":
            return Response(app.state.metrics.render(), media_type=CONTENT_TYPE)
        pipeline = app.state.pipeline
        engine = pipeline.answers.engine
        return JSONResponse({"vlm": engine.stats() if engine is not None else None, "spaces": sorted(pipeline.spaces),
                             "unavailable": dict(pipeline.unavailable)})

    install_contract(app, settings)
    return app


def job_runner(settings: Settings) -> RunnerFactory | None:
    """With a broker, Celery workers run the stages and this process applies the write queue (it owns
    the store); otherwise the pipeline's default, the embedded runner (worker threads)."""
    if not settings.jobs.broker_url:
        return None
    from indexer.owner import celery_runner

    return celery_runner


def app_from_env() -> FastAPI:
    return create_app(load_settings())
