"""The Celery application, built from settings by the process that needs it (never at import).

Queues: ``cpu`` (plan, parse), ``gpu`` (embed), ``write`` (write, commit: applied by the process
owning the store). Tasks acknowledge late and are rejected back to the queue when their worker
dies, so a killed worker's task runs again; every stage is idempotent, so that is safe.
"""

from __future__ import annotations

from celery import Celery
from kombu import Exchange, Queue

from mmrag.config import Settings

QUEUES = ("cpu", "gpu", "write")
TURN = "mmrag.turn"
"""The task of the ``cpu`` and ``gpu`` queues: a turn, which runs its queue's next work in corpus order
(:mod:`indexer.fair`)."""


def task_name(stage: str) -> str:
    return f"mmrag.{stage}"


def make_celery(settings: Settings) -> Celery:
    url = settings.jobs.broker_url
    if not url:
        raise ValueError("MMRAG_JOBS__BROKER_URL is not set: the distributed mode needs a broker (e.g. redis://...)")
    app = Celery("mmrag", broker=url, backend=url, set_as_current=False)
    app.conf.update(
        task_queues=[Queue(q, Exchange(q), routing_key=q) for q in QUEUES],
        task_default_queue="cpu",
        task_serializer="json", accept_content=["json"], result_serializer="json",
        task_ignore_result=True,  # progress lives in the job state, not in results
        task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
        broker_transport_options={"visibility_timeout": settings.jobs.visibility_timeout_s},
        broker_connection_retry_on_startup=True, worker_hijack_root_logger=False,
    )
    return app


def write_queue() -> Queue:
    return Queue("write", Exchange("write"), routing_key="write")
