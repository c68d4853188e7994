"""Worker entry points: ``mmrag worker cpu|gpu|write|all`` start a Celery worker for one role.

    cpu    decode/render/OCR (plan, parse); no models loaded
    gpu    embed (loads the embedders, or calls MMRAG_EMBED__SERVICE_URL)
    write  the store writer (write, commit): only with a Qdrant server, or when no ``mmrag serve``
           owns the data folder (the embedded store has one owner process)
    all    every queue in one worker (small deployments, tests)
"""

from __future__ import annotations

from celery import Celery

from indexer.app import make_celery
from indexer.tasks import register_worker_tasks, register_writer_tasks
from mmrag.config import Settings
from mmrag.jobs.spool import Spool
from mmrag.jobs.stages import StageContext
from mmrag.pipeline import build_embedders, build_pipeline, build_spaces, spool_dir

ROLES = {"cpu": ["cpu"], "gpu": ["gpu"], "write": ["write"], "all": ["cpu", "gpu", "write"]}


def build_worker(settings: Settings, role: str) -> Celery:
    app = make_celery(settings)
    queues = ROLES[role]
    spaces = None
    if "gpu" in queues:
        embedders, _ = build_embedders(settings)
        spaces = build_spaces(embedders)
    ctx = StageContext(settings.ingest, Spool(spool_dir(settings)), settings.jobs.batch_pages, spaces)
    register_worker_tasks(app, ctx, settings.jobs)
    if "write" in queues:
        pipeline = build_pipeline(settings)
        assert pipeline.job_writer is not None
        register_writer_tasks(app, pipeline.job_writer.handle)
    return app


def run_worker(settings: Settings, role: str, concurrency: int, pool: str, loglevel: str = "INFO") -> None:
    app = build_worker(settings, role)
    app.worker_main(["worker", "-Q", ",".join(ROLES[role]), f"--concurrency={concurrency}", f"--pool={pool}",
                     f"--loglevel={loglevel}", "--without-gossip", "--without-mingle", "--without-heartbeat",
                     "-n", f"mmrag-{role}@%h"])
