"""Prometheus metrics (``GET /metrics``), structured logs and health probes of the API.

Metrics live in a registry per app (tests build many apps in one process):

- ``mmrag_http_requests_total{method,route,status}`` and ``mmrag_http_request_duration_seconds``
  (histogram) per route template, observed by :class:`api.middleware.RequestMiddleware`;
- ``mmrag_stage_seconds{pipeline,stage}`` (histogram): the timings that search and answer results
  and finished ingestion jobs already carry (parse, OCR, embed per space, write, retrieve, encoder,
  prefill, first token, ...);
- read at scrape time: jobs by state, job queue depths, encoder-cache hits/misses/bytes, VLM
  admission tokens in use / queued / rejected.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

REQUEST_ID: ContextVar[str] = ContextVar("mmrag_request_id", default="")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Lifecycle: one per app, created with it; :meth:`render` at each scrape."""

    def __init__(self, state: Any) -> None:
        self.state = state  # the app's state: its pipeline is set in the lifespan
        self.registry = CollectorRegistry()
        self.requests = Counter("mmrag_http_requests", "HTTP requests by route template and status",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("mmrag_http_request_duration_seconds", "HTTP request latency by route template",
                                 ["method", "route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.stages = Histogram("mmrag_stage_seconds", "Pipeline stage timings (search, answer, ingest jobs)",
                                ["pipeline", "stage"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.registry.register(StateCollector(state))
        self._jobs_seen = time.time()  # jobs finished before start-up are not observed

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_timings(self, pipeline: str, timings: dict[str, float]) -> None:
        for stage, seconds in timings.items():
            if isinstance(seconds, int | float) and seconds >= 0:
                self.stages.labels(pipeline, stage.removesuffix("_s")).observe(float(seconds))

    def render(self) -> bytes:
        self._observe_finished_jobs()
        return generate_latest(self.registry)

    def _observe_finished_jobs(self) -> None:
        jobs = getattr(getattr(self.state, "pipeline", None), "jobs", None)
        if jobs is None:
            return
        for finished_at, timings in jobs.finished_since(self._jobs_seen):
            self.observe_timings("ingest", timings)
            self._jobs_seen = max(self._jobs_seen, finished_at)


class StateCollector(Collector):
    """Gauges and counters read from the running components at scrape time."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        pipeline = getattr(self.state, "pipeline", None)
        if pipeline is None:
            return
        if pipeline.jobs is not None:
            jobs = GaugeMetricFamily("mmrag_jobs", "Ingestion jobs by state", labels=["state"])
            for state, n in sorted(pipeline.jobs.state_counts().items()):
                jobs.add_metric([state], n)
            yield jobs
        queues = getattr(getattr(pipeline, "runner", None), "queues", None) or {}  # the embedded runner's
        depth = GaugeMetricFamily("mmrag_job_queue_depth", "Work items waiting per job queue", labels=["queue"])
        for name, q in sorted(queues.items()):
            depth.add_metric([name], q.qsize())
        yield depth
        engine = pipeline.answers.engine
        if engine is not None:
            yield from vlm_metrics(engine)


def vlm_metrics(engine: Any) -> Iterator[Metric]:
    stats = engine.stats()
    for name in ("hits", "misses", "evicted"):
        yield CounterMetricFamily(f"mmrag_encoder_cache_{name}", f"Encoder cache {name}",
                                  value=stats[f"encoder_cache_{name}"])
    yield GaugeMetricFamily("mmrag_encoder_cache_bytes", "Bytes held by the encoder cache",
                            value=stats["encoder_cache_bytes"])
    yield GaugeMetricFamily("mmrag_encoder_cache_entries", "Images held by the encoder cache",
                            value=stats["encoder_cache_entries"])
    yield GaugeMetricFamily("mmrag_admission_tokens_in_use", "VLM tokens admitted now",
                            value=stats["admission_used_tokens"])
    yield GaugeMetricFamily("mmrag_admission_tokens_budget", "VLM token budget",
                            value=stats["admission_budget_tokens"])
    yield GaugeMetricFamily("mmrag_admission_queued", "VLM requests waiting for admission",
                            value=stats["admission_queued"])
    yield CounterMetricFamily("mmrag_admission_rejected", "VLM requests refused with 429 (queue full)",
                              value=getattr(engine.admission, "rejected", 0))


class JsonFormatter(logging.Formatter):
    """One JSON object per line; ``extra`` fields given to the logger are kept (never keys or text)."""

    FIELDS = ("method", "route", "path", "status", "duration_ms", "key_id", "client")

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": round(record.created, 3), "level": record.levelname, "logger": record.name,
                               "message": record.getMessage(),
                               "request_id": getattr(record, "request_id", None) or REQUEST_ID.get()}
        out.update({k: getattr(record, k) for k in self.FIELDS if hasattr(record, k)})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(fmt: str, level: str) -> None:
    """``json``: every log record (uvicorn's included) as one JSON line on stderr; uvicorn's access log
    is replaced by the request log of the middleware. ``text``: leave logging as it is."""
    if fmt != "json":
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True


def readiness(state: Any) -> dict[str, str]:
    """Each dependency that must answer before the API is useful: ``ok`` or why not."""
    pipeline = state.pipeline
    checks: dict[str, str] = {}
    try:
        pipeline.check_store()
        checks["store"] = "ok"
    except Exception as exc:  # any failure of the catalog or vector store means not ready
        checks["store"] = f"{type(exc).__name__}: {exc}"
    settings = pipeline.settings
    if settings.jobs.broker_url:
        checks["broker"] = _ping_broker(settings.jobs.broker_url)
    if settings.embed.service_url:
        checks["embedding_service"] = _ping_http(settings.embed.service_url.rstrip("/") + "/health")
    return checks


def _ping_broker(url: str) -> str:
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception as exc:  # unreachable broker: not ready, say why
        return f"{type(exc).__name__}: {exc}"


def _ping_http(url: str) -> str:
    import httpx

    try:
        response = httpx.get(url, timeout=2.0)
        return "ok" if response.status_code == 200 else f"HTTP {response.status_code}"
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
