"""``mmrag worker <role>``: start a Celery worker of the ingestion pipeline (needs MMRAG_JOBS__BROKER_URL).

The CLI is a shell: Celery is imported only inside the command, from ``indexer/``.
"""

from __future__ import annotations

from typing import Annotated

import typer

worker_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="Run a distributed ingestion worker (Celery, Redis broker).")

Concurrency = Annotated[int, typer.Option(help="Tasks run at once by this worker")]
Pool = Annotated[str, typer.Option(help="Celery pool: solo, threads or prefork")]


def _run(role: str, concurrency: int, pool: str) -> None:
    from indexer.worker import run_worker
    from mmrag.config import load_settings

    settings = load_settings()
    if not settings.jobs.broker_url:
        typer.echo("error: set MMRAG_JOBS__BROKER_URL (e.g. redis://localhost:6379/0)", err=True)
        raise typer.Exit(2)
    run_worker(settings, role, concurrency, pool, settings.log_level)


@worker_app.command()
def cpu(concurrency: Concurrency = 1, pool: Pool = "solo") -> None:
    """Decode, render and OCR page batches (queue ``cpu``)."""
    _run("cpu", concurrency, pool)


@worker_app.command()
def gpu(concurrency: Concurrency = 1, pool: Pool = "solo") -> None:
    """Embed page batches (queue ``gpu``), in-process or through MMRAG_EMBED__SERVICE_URL."""
    _run("gpu", concurrency, pool)


@worker_app.command()
def write(concurrency: Concurrency = 1, pool: Pool = "solo") -> None:
    """Write batches to the store (queue ``write``): with a Qdrant server, or when no `mmrag serve` runs."""
    _run("write", concurrency, pool)


@worker_app.command(name="all")
def all_queues(concurrency: Concurrency = 1, pool: Pool = "threads") -> None:
    """Every queue in one worker."""
    _run("all", concurrency, pool)
