"""The FastAPI application: a thin shell over :mod:`mmrag.pipeline`.

``create_app(settings)`` builds the pipeline in the lifespan (start-up), never at import;
``mmrag serve`` runs it under uvicorn. ``uvicorn api.app:app_from_env --factory`` works too.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api.errors import install_error_handlers
from api.routes import answer, corpora, documents, evaluations, jobs, search
from api.schemas import HealthOut
from mmrag import __version__
from mmrag.config import Settings, load_settings
from mmrag.evaluate.service import EvaluationService
from mmrag.evaluate.targets import StreamingAnswerer
from mmrag.jobs.runner import JobRunner, local_runner
from mmrag.pipeline import Pipeline, build_pipeline

log = logging.getLogger("mmrag.api")


def server_file(settings: Settings) -> str:
    return str(settings.data_dir / "server.json")


def create_app(settings: Settings | None = None, pipeline: Pipeline | None = None) -> FastAPI:
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.pipeline = pipeline or build_pipeline(settings)
        app.state.settings = settings
        app.state.jobs = start_job_runner(app.state.pipeline)
        answerer = app.state.pipeline.enable_answers()
        app.state.evaluations = EvaluationService(app.state.pipeline, settings.data_dir / "evaluations",
                                                  settings.eval_suites_dir, answerer=StreamingAnswerer(answerer))
        marker = server_file(settings)
        url = os.environ.get("MMRAG_SERVER_URL", f"http://{settings.api.host}:{settings.api.port}")
        with open(marker, "w") as fh:
            json.dump({"pid": os.getpid(), "url": url}, fh)
        log.info("mmrag serving data folder %s; spaces %s; off: %s", settings.data_dir,
                 sorted(app.state.pipeline.spaces), app.state.pipeline.unavailable or "none")
        try:
            yield
        finally:
            app.state.jobs.stop()
            app.state.evaluations.close()
            if os.path.exists(marker):
                os.unlink(marker)
            if pipeline is None:
                app.state.pipeline.close()

    app = FastAPI(title="mmrag", version=__version__, lifespan=lifespan,
                  description="Multimodal RAG: upload PDFs, scans and images; search them; get answers.")
    install_error_handlers(app)
    app.include_router(corpora.router)
    app.include_router(documents.router)
    app.include_router(search.router)
    app.include_router(jobs.router)
    app.include_router(answer.router)
    app.include_router(evaluations.router)

    @app.get("/health", response_model=HealthOut, tags=["health"])
    def health() -> HealthOut:
        """Liveness plus which spaces are on, and why any configured one is off."""
        info = app.state.pipeline.health()
        return HealthOut(status="ok", version=__version__, **info)

    @app.get("/metrics", tags=["health"])
    def metrics() -> dict[str, object]:
        """Counters for monitoring: VLM engine (encoder cache hits/misses/evictions, admission tokens
        in use, peak, queued) and which spaces are on."""
        pipeline = app.state.pipeline
        engine = pipeline.answerer.engine if pipeline.answerer is not None else None
        return {"vlm": engine.stats() if engine is not None else None, "spaces": sorted(pipeline.spaces),
                "unavailable": dict(pipeline.unavailable)}

    return app


def start_job_runner(pipeline: Pipeline) -> JobRunner:
    """The embedded runner (worker threads) by default; with a broker, Celery workers run the stages
    and this process applies the write queue (it owns the store)."""
    runner: JobRunner
    if pipeline.settings.jobs.broker_url:
        from indexer.owner import CeleryRunner

        runner = CeleryRunner(pipeline)
    else:
        runner = local_runner(pipeline)
    runner.start()
    return runner


def app_from_env() -> FastAPI:
    return create_app(load_settings())
