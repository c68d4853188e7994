"""The tasks: three-line adapters from ids to the shared stage code, plus the retry policy.

``register_worker_tasks`` binds plan/parse/embed to a :class:`StageContext` (a CPU worker has no
embedders; a GPU worker loads them, or talks to the embedding service when
``MMRAG_EMBED__SERVICE_URL`` is set). ``register_writer_tasks`` binds write/commit to the
process owning the store. Each task sends the work its stage returns on: work of the ``cpu`` and ``gpu``
queues waits its corpus's turn (:mod:`indexer.fair`: the message is a turn, ``mmrag.turn``), ``write``
work goes to its queue as a task of its stage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Celery, Task
from celery.exceptions import Retry

from indexer.app import TURN, task_name
from indexer.fair import FAIR_QUEUES, FairQueues
from mmrag.config import JobsConfig
from mmrag.jobs.model import Stage, Work
from mmrag.jobs.stages import TRANSIENT, StageContext, give_up, retry_delay, run_stage

log = logging.getLogger(__name__)


def send(app: Celery, fair: FairQueues, work: list[Work]) -> None:
    for w in work:
        if w.queue in FAIR_QUEUES:
            fair.push(w)
            app.send_task(TURN, args=[w.queue], queue=w.queue, routing_key=w.queue)
        else:
            app.send_task(task_name(w.stage), args=w.as_args(), queue=w.queue, routing_key=w.queue)


def release(app: Celery, fair: FairQueues, queue: str, turn: str) -> None:
    """The turn is over; a turn owed (every corpus with work was at its share) is sent again."""
    if fair.done(queue, turn):
        app.send_task(TURN, args=[queue], queue=queue, routing_key=queue)


def run_with_retries(task: Task, ctx: StageContext, config: JobsConfig, work: Work) -> list[Work]:
    """The stage; transient errors retry with exponential backoff, then fail the file with the reason."""
    try:
        return run_stage(ctx, work)
    except TRANSIENT as exc:
        retries = task.request.retries
        if retries >= config.max_retries:
            return give_up(work, exc)
        raise task.retry(exc=exc, countdown=retry_delay(config, retries)) from exc


def register_worker_tasks(app: Celery, ctx: StageContext, config: JobsConfig, fair: FairQueues) -> None:
    """The worker stages' tasks on ``app``, closures over this role's context. Every task here is registered with
    ``shared=False``: Celery's default registers a task on every app the process finalizes later, so a second app
    (a test's second worker) ran the first app's closures, with the first app's context (Celery's
    DuplicateTaskNameWarning: "calls under this name reach the callable registered first")."""

    @app.task(name=TURN, bind=True, max_retries=None, shared=False)
    def turn(self: Task, queue: str) -> None:
        """The next corpus's next work of ``queue`` (the same work again on a redelivery or a retry)."""
        work = fair.take(queue, self.request.id)
        if work is None:
            return  # its work ran on another turn
        log.info("turn %s: %s of job %s file %d batch %d", queue, work.stage, work.job_id, work.file, work.batch)
        try:
            after = run_with_retries(self, ctx, config, work)
        except Retry:
            raise  # the retry runs the work held for this turn
        except Exception:
            release(app, fair, queue, self.request.id)  # a fault, as before turns: the owner's watchdog re-sends
            raise
        send(app, fair, after)
        release(app, fair, queue, self.request.id)

    def define(stage: Stage) -> None:  # messages of a version before turns
        @app.task(name=task_name(stage), bind=True, max_retries=None, shared=False)
        def stage_task(self: Task, job_id: str, file: int, batch: int, info: dict[str, Any]) -> None:
            send(app, fair, run_with_retries(self, ctx, config, Work.from_args(stage, job_id, file, batch, info)))

    worker_stages: tuple[Stage, ...] = ("plan", "parse", "embed")
    for stage in worker_stages:
        define(stage)


def register_writer_tasks(app: Celery, handle: Callable[[Work], list[Work]], fair: FairQueues) -> None:
    """``handle`` is :meth:`JobWriter.handle`, which applies one state transition at a time itself."""

    def define(stage: Stage) -> None:
        @app.task(name=task_name(stage), bind=True, shared=False)
        def writer_task(self: Task, job_id: str, file: int, batch: int, info: dict[str, Any]) -> None:
            send(app, fair, handle(Work.from_args(stage, job_id, file, batch, info)))

    owner_stages: tuple[Stage, ...] = ("write", "commit")
    for stage in owner_stages:
        define(stage)
