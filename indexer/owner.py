"""The owner's side of the distributed mode, run inside ``mmrag serve``.

:class:`CeleryRunner` sends new work to the Celery queues, consumes the ``write`` queue itself
(the embedded store has one owner: stateless workers hand their results to this process), resumes
unfinished jobs at start and re-sends the pending work of a job that made no progress for
``stall_s`` (messages lost with a broker restart). With a Qdrant server the write queue may
instead be consumed by ``mmrag worker write`` processes (``consume_writes=False`` here).

Lifecycle: ``start()`` after the pipeline is built, ``stop()`` before it closes.
"""

from __future__ import annotations

import logging
import threading
import time

from kombu import Message

from indexer.app import make_celery, write_queue
from indexer.fair import FairQueues
from indexer.tasks import send
from mmrag.config import Settings
from mmrag.jobs.model import JobStatus, Stage, Work
from mmrag.jobs.retry_later import RetryLater, unrecorded_failure
from mmrag.jobs.runner import owner_failed
from mmrag.jobs.stages import StageContext
from mmrag.jobs.writer import JobWriter, Upload

log = logging.getLogger(__name__)


class CeleryRunner:
    def __init__(self, writer: JobWriter, settings: Settings, consume_writes: bool | None = None) -> None:
        self.writer, self.config = writer, settings.jobs
        self.app = make_celery(settings)
        self.fair = FairQueues.from_settings(settings.jobs)  # corpora's turns on the cpu and gpu queues
        self.consume_writes = not settings.store.url if consume_writes is None else consume_writes
        self._stop = threading.Event()
        self.later = RetryLater(self._apply, self.config.retry_backoff_s)  # failures a full disk kept unrecorded
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        targets = [self._watch] + ([self._consume] if self.consume_writes else [])
        for target in targets:
            t = threading.Thread(target=target, name=f"mmrag-{target.__name__.strip('_')}", daemon=True)
            t.start()
            self._threads.append(t)
        for job_id in self.writer.recover():
            self._resend(job_id, "resumed at start")

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self.later.stop()
        for t in self._threads:
            t.join(timeout)

    def submit(self, corpus: str, uploads: list[Upload]) -> str:
        job_id, work = self.writer.submit(corpus, uploads)
        self.fair.register_job(job_id, corpus)
        send(self.app, self.fair, work)
        return job_id

    def cancel(self, job_id: str) -> JobStatus:
        return self.writer.cancel(job_id)

    def _resend(self, job_id: str, why: str) -> None:
        work = self.writer.pending_work(job_id, touch=True)
        log.warning("job %s (%s): re-sending %d pending work items", job_id, why, len(work))
        if work:
            self.fair.register_job(job_id, self.writer.jobs.status(job_id).corpus)
        send(self.app, self.fair, work)

    def _watch(self) -> None:
        """Re-send the pending work of jobs that stalled (their messages were lost)."""
        while not self._stop.wait(min(5.0, self.config.stall_s / 2)):
            now = time.time()
            for job_id in self.writer.jobs.unfinished():
                if now - self.writer.jobs.status(job_id).updated_at > self.config.stall_s:
                    self._resend(job_id, f"no progress for {self.config.stall_s:.0f}s")

    def _on_message(self, body: object, message: Message) -> None:
        stage: Stage = str(message.headers.get("task", "")).removeprefix("mmrag.")  # type: ignore[assignment]
        try:
            args = body[0] if isinstance(body, list | tuple) else []
            work = Work.from_args(stage, *args)
        except Exception:  # a bad message must not block the queue
            log.exception("write-queue message %s is not work", message.headers.get("id"))
        else:
            self._apply([work])
        message.ack()

    def _apply(self, work: list[Work]) -> None:
        """Owner work applied and what follows sent; a fault of the writer fails its file with the reason (so the
        job ends), and a failure the full disk kept from being recorded is applied again later."""
        for w in work:
            try:
                after = self.writer.handle(w)
            except Exception as exc:
                log.exception("owner work %s failed", w)
                after = owner_failed(w, exc)
                if unrecorded_failure(w, exc):
                    self.later(w)
            try:
                send(self.app, self.fair, after)
            except Exception:  # the broker is down: the stall watchdog re-sends the job's pending work
                log.exception("could not send the work that follows %s", w)

    def _consume(self) -> None:
        while not self._stop.is_set():
            try:
                with self.app.connection_for_read() as conn, \
                        conn.Consumer([write_queue()], callbacks=[self._on_message], accept=["json"],
                                      prefetch_count=1):
                    while not self._stop.is_set():
                        try:
                            conn.drain_events(timeout=1.0)
                        except TimeoutError:
                            continue
            except Exception as exc:  # broker down: retry
                log.warning("write-queue consumer: %s; reconnecting", exc)
                self._stop.wait(2.0)


def celery_runner(writer: JobWriter, ctx: StageContext, settings: Settings) -> CeleryRunner:
    """A :data:`mmrag.jobs.runner.RunnerFactory`: the stages run on Celery workers (``ctx`` stays unused here)."""
    return CeleryRunner(writer, settings)
