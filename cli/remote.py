"""Where CLI commands run: over REST (:class:`mmrag.rest_client.Client`) against the running server that
owns the data folder, or in-process (the pipeline, its embedded job runner) when none does.

Both backends return the same plain data (the REST shapes), so commands print one way. The REST
path imports no model code: ``mmrag search`` against a running server starts in well under a second.
:func:`open_backend` is the one chooser (ingest, search, corpora, answer). Not chosen here: ``mmrag eval
run --api URL`` names its server (an in-process evaluation builds its own pipeline from the suite's
settings, which a running server cannot take), and ``mmrag keys`` falls back to the data folder's key
store when the server refuses the key (that is how the first admin key is made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from mmrag import errors
from mmrag.config import load_settings
from mmrag.rest_client import Client
from mmrag.types import SearchRequest

if TYPE_CHECKING:
    from mmrag.pipeline import Pipeline

Rejected = tuple[str, str, str]  # (filename, error code, message): refused before a job started


class Backend(Protocol):
    def ensure_corpus(self, corpus: str) -> None: ...
    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        """Start ingestion jobs for the files; (job ids, files rejected up front)."""
        ...
    def job(self, job_id: str) -> dict[str, Any]:
        """A job's progress as plain data (see :meth:`mmrag.jobs.model.JobStatus.summary`)."""
        ...
    def search(self, corpus: str, request: SearchRequest) -> list[dict[str, Any]]:
        """Results as plain data (the REST ``results``)."""
        ...
    def corpora(self) -> list[dict[str, Any]]: ...
    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """(event, data) pairs of an answer: evidence, token..., done (or error), as the REST SSE stream."""
        ...
    def close(self) -> None: ...


class LocalBackend:
    """In-process: this CLI process owns the data folder. With ``run_jobs`` it runs the embedded job
    runner while it lives (an interrupted job resumes at the next `mmrag ingest` or `mmrag serve`)."""

    def __init__(self, run_jobs: bool) -> None:
        from mmrag.pipeline import build_pipeline

        self.pipeline: Pipeline = build_pipeline(load_settings(), run_jobs=run_jobs)

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        from mmrag.jobs.uploads import read_files, submit_uploads, upload_check

        submitted = submit_uploads(self.pipeline.runner, corpus, read_files(paths), metadata,
                                   upload_check(self.pipeline.settings.ingest))
        rejected = [(r.filename, r.code, r.message) for r in submitted.refused]
        return ([submitted.job_id] if submitted.job_id else []), rejected

    def job(self, job_id: str) -> dict[str, Any]:
        return self.pipeline.jobs.status(job_id).summary()

    def ensure_corpus(self, corpus: str) -> None:
        self.pipeline.corpora.ensure_corpus(corpus)

    def search(self, corpus: str, request: SearchRequest) -> list[dict[str, Any]]:
        return [e.as_json() for e in self.pipeline.search(corpus, request).evidence]

    def corpora(self) -> list[dict[str, Any]]:
        return [{"name": r.name, "config": r.config.model_dump(), "documents": r.documents, "pages": r.pages,
                 "created_at": r.created_at} for r in self.pipeline.corpora.listed()]

    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        from mmrag.generate.answer_service import event_payloads

        service = self.pipeline.answers.enable()
        yield from event_payloads(service.answer_stream(corpus, body["question"], body["top_k"],
                                                        body["visual_token_budget"], body["max_new_tokens"]))

    def close(self) -> None:
        self.pipeline.close()


class RemoteBackend:
    upload_files = 32  # files per upload request (each request is one job)
    upload_bytes = 256 * 1024 * 1024  # or fewer, to bound one request's size

    def __init__(self, client: Client) -> None:
        self.client = client

    def _groups(self, paths: list[Path]) -> list[list[Path]]:
        groups: list[list[Path]] = [[]]
        size = 0
        for p in paths:
            n = p.stat().st_size
            if groups[-1] and (len(groups[-1]) >= self.upload_files or size + n > self.upload_bytes):
                groups.append([])
                size = 0
            groups[-1].append(p)
            size += n
        return [g for g in groups if g]

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        job_ids: list[str] = []
        rejected: list[Rejected] = []
        for group in self._groups(paths):
            body = self.client.upload(corpus, [(p.name, p.read_bytes()) for p in group], metadata or None)
            rejected.extend((e["filename"], e["error"], e["message"]) for e in body.get("errors", []))
            if body.get("job"):
                job_ids.append(body["job"]["id"])
        return job_ids, rejected

    def job(self, job_id: str) -> dict[str, Any]:
        return self.client.job(job_id)

    def ensure_corpus(self, corpus: str) -> None:
        self.client.ensure_corpus(corpus)

    def search(self, corpus: str, request: SearchRequest) -> list[dict[str, Any]]:
        return list(self.client.search(corpus, request)["results"])

    def corpora(self) -> list[dict[str, Any]]:
        return self.client.corpora()

    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        return self.client.answer_events(corpus, body)

    def close(self) -> None:
        self.client.close()


def server_client(data_dir: Path, timeout_s: float = 600.0) -> Client | None:
    """A client of the live ``mmrag serve`` that owns ``data_dir`` (it answered ``/health``), if any."""
    try:
        info = json.loads((data_dir / "server.json").read_text())
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    client = Client(str(info["url"]), timeout_s=timeout_s)
    try:
        client.call("GET", "/health", timeout=2.0)
        return client
    except (httpx.HTTPError, errors.MMRAGError):
        client.close()
        return None


def running_server(data_dir: Path) -> str | None:
    """URL of the live ``mmrag serve`` that owns ``data_dir``, if any."""
    client = server_client(data_dir)
    if client is None:
        return None
    client.close()
    return client.base_url


@contextmanager
def folder_pipeline() -> Iterator[Pipeline]:
    """The in-process pipeline (no job runner) of a command that must own the data folder itself:
    Conflict while a ``mmrag serve`` owns it."""
    from mmrag.pipeline import build_pipeline

    settings = load_settings()
    if url := running_server(settings.data_dir):
        raise errors.Conflict(f"mmrag serve ({url}) owns {settings.data_dir}; stop it first")
    pipeline = build_pipeline(settings, run_jobs=False)
    try:
        yield pipeline
    finally:
        pipeline.close()


@contextmanager
def open_backend(*, run_jobs: bool = False, timeout_s: float = 600.0) -> Iterator[Backend]:
    """The running server's REST API if there is one, else the in-process pipeline (``run_jobs``:
    with its job runner, for commands that ingest): the one place where a command chooses. ``timeout_s``:
    of each REST read (an answer's stream waits for the VLM)."""
    client = server_client(load_settings().data_dir, timeout_s)
    backend: Backend = RemoteBackend(client) if client is not None else LocalBackend(run_jobs)
    try:
        yield backend
    finally:
        backend.close()
