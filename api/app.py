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

from api.auth import AuthGate
from api.contract import install_contract
from api.errors import install_error_handlers
from api.mcp_server import mount_mcp
from api.middleware import GateMiddleware, RequestMiddleware
from api.observability import Metrics, configure_logging
from api.routes import answer, corpora, documents, evaluations, health, jobs, keys, openai_chat, ranker, search, web
from mmrag import __version__
from mmrag.config import Settings, load_settings
from mmrag.evaluate.ranker_training import RankerTraining
from mmrag.evaluate.service import EvaluationService
from mmrag.jobs.runner import RunnerFactory
from mmrag.local_application import LocalApplication
from mmrag.pipeline import Pipeline, build_pipeline
from mmrag.process_memory import hand_back_memory

log = logging.getLogger("mmrag.api")


def server_file(settings: Settings) -> str:
    return str(settings.data_dir / "server.json")


def create_app(settings: Settings | None = None, pipeline: Pipeline | None = None) -> FastAPI:
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        start_up(app, settings, pipeline)
        try:
            async with app.state.mcp.manager.run():  # the MCP endpoint's sessions live as long as the app
                yield
        finally:
            shut_down(app, settings, owns_pipeline=pipeline is None)

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
    app.include_router(health.router)
    app.state.mcp = mount_mcp(app)  # /mcp: MCP's streamable HTTP transport (not in the OpenAPI document)

    install_contract(app, settings)
    return app


def start_up(app: FastAPI, settings: Settings, pipeline: Pipeline | None) -> None:
    """Build (or take) the pipeline, hand its parts to the evaluation and ranker-training jobs, load the VLM,
    warm the corpora's models up in the background and write the marker file by which the CLI finds this
    server."""
    configure_logging(settings.api.log_format, settings.log_level)
    app.state.trimmer = hand_back_memory(settings.api.malloc_arenas, settings.api.malloc_trim_s)  # before its threads
    app.state.pipeline = pipeline = pipeline or build_pipeline(settings, runner=job_runner(settings))
    app.state.application = application = LocalApplication(pipeline, owns_pipeline=False)  # what the doors call
    app.state.evaluations = EvaluationService(application, settings.data_dir / "evaluations", settings.eval_suites_dir)
    app.state.rankers = RankerTraining(pipeline.retriever)
    app.state.settings = settings
    app.state.auth = AuthGate(settings)
    app.state.pipeline.answers.enable()  # load the VLM at start-up: /health says whether it is on
    # the models and rankers of the served corpora load in the background: the first search or upload does
    # not stall, and the collector does not scan them again (Pipeline.warm_up)
    app.state.pipeline.start_warm_up()
    url = os.environ.get("MMRAG_SERVER_URL", f"http://{settings.api.host}:{settings.api.port}")
    with open(server_file(settings), "w") as fh:
        json.dump({"pid": os.getpid(), "url": url}, fh)
    log.info("mmrag serving data folder %s; spaces %s; off: %s", settings.data_dir,
             app.state.pipeline.space_names(), app.state.pipeline.unavailable or "none")


def shut_down(app: FastAPI, settings: Settings, *, owns_pipeline: bool) -> None:
    """The evaluation and training jobs stop, the key store and the marker file go; the pipeline is closed
    when the app built it."""
    app.state.evaluations.close()
    app.state.rankers.close()
    app.state.trimmer.close()
    app.state.auth.close()
    marker = server_file(settings)
    if os.path.exists(marker):
        os.unlink(marker)
    if owns_pipeline:
        app.state.pipeline.close()


def job_runner(settings: Settings) -> RunnerFactory | None:
    """With a broker, Celery workers run the stages and this process applies the write queue (it owns
    the store); otherwise the pipeline's default, the embedded runner (worker threads)."""
    if not settings.jobs.broker_url:
        return None
    from indexer.owner import celery_runner

    return celery_runner


def app_from_env() -> FastAPI:
    return create_app(load_settings())
