"""The tasks: three-line adapters from ids to the shared stage code, plus the retry policy.

``register_worker_tasks`` binds plan/parse/embed to a :class:`StageContext` (a CPU worker has no
embedders; a GPU worker loads them, or talks to the embedding service when
``MMRAG_EMBED__SERVICE_URL`` is set). ``register_writer_tasks`` binds write/commit to the
process owning the store. Each task sends the work its stage returns to the next queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Celery, Task

from indexer.app import task_name
from mmrag.config import JobsConfig
from mmrag.jobs.model import Stage, Work
from mmrag.jobs.stages import TRANSIENT, StageContext, give_up, retry_delay, run_stage


def send(app: Celery, work: list[Work]) -> None:
    for w in work:
        app.send_task(task_name(w.stage), args=w.as_args(), queue=w.queue, routing_key=w.queue)


def run_with_retries(task: Task, ctx: StageContext, config: JobsConfig, work: Work) -> list[Work]:
    """The stage; transient errors retry with exponential backoff, then fail the file with the reason."""
    try:
        return run_stage(ctx, work)
    except TRANSIENT as exc:
        retries = task.request.retries
        if retries >= config.max_retries:
            return give_up(work, exc)
        raise task.retry(exc=exc, countdown=retry_delay(config, retries)) from exc


def register_worker_tasks(app: Celery, ctx: StageContext, config: JobsConfig) -> None:
    def define(stage: Stage) -> None:
        @app.task(name=task_name(stage), bind=True, max_retries=None)
        def stage_task(self: Task, job_id: str, file: int, batch: int, info: dict[str, Any]) -> None:
            send(app, run_with_retries(self, ctx, config, Work.from_args(stage, job_id, file, batch, info)))

    worker_stages: tuple[Stage, ...] = ("plan", "parse", "embed")
    for stage in worker_stages:
        define(stage)


def register_writer_tasks(app: Celery, handle: Callable[[Work], list[Work]]) -> None:
    """``handle`` is :meth:`JobWriter.handle`, which applies one state transition at a time itself."""

    def define(stage: Stage) -> None:
        @app.task(name=task_name(stage), bind=True)
        def writer_task(self: Task, job_id: str, file: int, batch: int, info: dict[str, Any]) -> None:
            send(app, handle(Work.from_args(stage, job_id, file, batch, info)))

    owner_stages: tuple[Stage, ...] = ("write", "commit")
    for stage in owner_stages:
        define(stage)
