"""Worker entry points: ``mmrag worker cpu|gpu|write|all`` start a Celery worker for one role.

    cpu    decode/render/OCR (plan, parse); no models loaded
    gpu    embed (loads the embedders, or calls MMRAG_EMBED__SERVICE_URL)
    write  the store writer (write, commit): only with a Qdrant server, or when no ``mmrag serve``
           owns the data folder (the embedded store has one owner process)
    all    every queue in one worker (small deployments, tests)
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from indexer.app import make_celery
from indexer.fair import FairQueues
from indexer.tasks import register_worker_tasks, register_writer_tasks
from mmrag.config import Settings
from mmrag.embed.threads import set_torch_threads
from mmrag.pipeline import build_pipeline, build_worker_context
from mmrag.process_memory import Trimmer, hand_back_memory

ROLES = {"cpu": ["cpu"], "gpu": ["gpu"], "write": ["write"], "all": ["cpu", "gpu", "write"]}


def build_worker(settings: Settings, role: str) -> Celery:
    """The Celery app of one role. A role with the write queue owns the store: it builds the pipeline
    (once; its stages embed with the pipeline's spaces); the others build only a stage context."""
    app = make_celery(settings)
    fair = FairQueues.from_settings(settings.jobs)
    queues = ROLES[role]
    if "gpu" in queues and settings.jobs.embed_threads:
        set_torch_threads(settings.jobs.embed_threads)  # before any forward pass
    if "write" in queues:
        pipeline = build_pipeline(settings, run_jobs=False)  # the Celery workers run the stages, not threads
        register_writer_tasks(app, pipeline.job_writer.handle, fair)
        ctx = pipeline.stage_context()
    else:
        ctx = build_worker_context(settings, embeds="gpu" in queues)
    register_worker_tasks(app, ctx, settings.jobs, fair)
    return app


class WorkerMemory:
    """A worker hands freed memory back as the server does (:mod:`mmrag.process_memory`, the same
    ``MMRAG_API__MALLOC_ARENAS`` and ``MMRAG_API__MALLOC_TRIM_S``): malloc tuned before the worker's threads
    exist and a trimmer thread in the process that runs the tasks — this one with the ``solo`` and ``threads``
    pools, each child with ``prefork`` (a forked child has no threads of its parent: it starts its own)."""

    def __init__(self, settings: Settings, pool: str) -> None:
        self.every_s = settings.api.malloc_trim_s
        self.trimmers = [hand_back_memory(settings.api.malloc_arenas, self.every_s)]
        self.prefork = pool == "prefork"
        if self.prefork:
            worker_process_init.connect(self.child_started, weak=False)

    def child_started(self, **_: Any) -> None:
        self.trimmers.append(Trimmer(self.every_s))

    def close(self) -> None:
        if self.prefork:
            worker_process_init.disconnect(self.child_started)
        for trimmer in self.trimmers:
            trimmer.close()


def run_worker(settings: Settings, role: str, concurrency: int, pool: str, loglevel: str = "INFO") -> None:
    memory = WorkerMemory(settings, pool)  # before the worker's threads
    try:
        app = build_worker(settings, role)
        app.worker_main(["worker", "-Q", ",".join(ROLES[role]), f"--concurrency={concurrency}", f"--pool={pool}",
                         f"--loglevel={loglevel}", "--without-gossip", "--without-mingle", "--without-heartbeat",
                         "-n", f"mmrag-{role}@%h"])
    finally:
        memory.close()
