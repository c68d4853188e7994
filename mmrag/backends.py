"""The one facade over "in this process or over REST": what CLI commands, the MCP server and evaluations
run against.

:class:`LocalBackend` wraps this process's pipeline; :class:`RemoteBackend` the running server's REST API
through the one REST client (:class:`mmrag.rest_client.Client`). Both return the same plain data (the REST
shapes), so a command prints one way and an evaluation's metrics never depend on how the results
travelled. Choosing between them (is a server running for the data folder?) is the CLI's
(``cli/remote.py``). This module imports no model code: ``mmrag search`` against a running server
starts in well under a second.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mmrag.errors import Conflict, MMRAGError
from mmrag.rest_client import Client
from mmrag.types import SearchRequest

if TYPE_CHECKING:
    from mmrag.jobs.model import JobStatus
    from mmrag.pipeline import Pipeline

Rejected = tuple[str, str, str]  # (filename, error code, message): refused before a job started
IngestProgress = Callable[[int, int, str], None]
"""Called as ``(done, total, filename)`` as files are ingested."""


class Answerer(Protocol):
    """The answer service: returns ``{"answer", "mode", "citations": [{"filename", "page"}], "timings"}``."""

    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]: ...


class Backend(Protocol):
    description: str  # "in-process" or "api <url>" (reports name it)
    can_answer: bool  # whether :meth:`answer` works (an evaluation skips its answer metrics otherwise)

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        """Create the corpus (with ``config``) unless it exists."""
        ...
    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        """Start ingestion jobs for the files; (job ids, files rejected up front)."""
        ...
    def job(self, job_id: str) -> dict[str, Any]:
        """A job's progress as plain data (see :meth:`mmrag.jobs.model.JobStatus.summary`)."""
        ...
    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create the corpus (with ``config`` if new), ingest every file and wait: ``{"documents", "pages"}``."""
        ...
    def search(self, corpus: str, request: SearchRequest) -> dict[str, Any]:
        """The REST search body: ``{"results": [...], "timings": {stage: seconds}}``."""
        ...
    def corpora(self) -> list[dict[str, Any]]: ...
    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """(event, data) pairs of an answer: evidence, token..., done (or error), as the REST SSE stream."""
        ...
    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]:
        """The final answer: ``{"answer", "mode", "citations": [{"filename", "page"}], "timings"}``."""
        ...
    def close(self) -> None: ...


class LocalBackend:
    """In-process: over a pipeline this process built (with its job runner running, for commands that
    ingest). ``answerer``: the answer service :meth:`answer` uses (None: it has none); ``answer_events``
    enables the pipeline's own. ``close`` closes the pipeline."""

    def __init__(self, pipeline: Pipeline, answerer: Answerer | None = None) -> None:
        self.pipeline = pipeline
        self.answerer = answerer
        self.description = "in-process"
        self.can_answer = answerer is not None

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        if config:
            from mmrag.config import CorpusConfig

            self.pipeline.corpora.ensure_corpus(corpus, CorpusConfig.model_validate(config))
        else:
            self.pipeline.corpora.ensure_corpus(corpus)

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        from mmrag.jobs.uploads import read_files, submit_uploads, upload_check

        submitted = submit_uploads(self.pipeline.runner, corpus, read_files(paths), metadata,
                                   upload_check(self.pipeline.settings.ingest))
        rejected = [(r.filename, r.code, r.message) for r in submitted.refused]
        return ([submitted.job_id] if submitted.job_id else []), rejected

    def job(self, job_id: str) -> dict[str, Any]:
        return self.pipeline.jobs.status(job_id).summary()

    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Through the pipeline's blocking ingest: one job over every file (those indexed already are not redone)."""
        from mmrag.jobs.model import FINISHED_FILE

        with contextlib.suppress(Conflict):  # pipelines whose ensure_corpus is not idempotent
            self.ensure_corpus(corpus, config)

        def on_job(job: JobStatus) -> None:
            progress(sum(f.state in FINISHED_FILE for f in job.files), len(files), "")

        docs = self.pipeline.ingest.files(corpus, list(files), {"source": "eval"}, on_job)
        progress(len(docs), len(files), "")
        return {"documents": len(docs), "pages": sum(d.page_count for d in docs)}

    def search(self, corpus: str, request: SearchRequest) -> dict[str, Any]:
        result = self.pipeline.search(corpus, request)
        return {"results": [e.as_json() for e in result.evidence], "timings": dict(result.timings)}

    def corpora(self) -> list[dict[str, Any]]:
        return [{"name": r.name, "config": r.config.model_dump(), "documents": r.documents, "pages": r.pages,
                 "created_at": r.created_at} for r in self.pipeline.corpora.listed()]

    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        from mmrag.generate.answer_service import event_payloads

        service = self.pipeline.answers.enable()
        yield from event_payloads(service.answer_stream(corpus, body["question"], body["top_k"],
                                                        body["visual_token_budget"], body["max_new_tokens"]))

    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]:
        if self.answerer is None:
            raise MMRAGError("this backend has no answerer")
        return self.answerer.answer(corpus, question, top_k)

    def close(self) -> None:
        self.pipeline.close()


class RemoteBackend:
    """Over REST: the server owns the data. Uploads go in groups (each request one job)."""

    upload_files = 32  # files per upload request (each request is one job)
    upload_bytes = 256 * 1024 * 1024  # or fewer, to bound one request's size

    def __init__(self, client: Client, *, job_timeout_s: float = 3600.0) -> None:
        self.client = client
        self.job_timeout_s = job_timeout_s  # how long :meth:`prepare` waits for one upload's job
        self.description = f"api {client.base_url}"
        self.can_answer = True

    def _groups(self, paths: Sequence[Path]) -> list[list[Path]]:
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

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        self.client.ensure_corpus(corpus, config)

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

    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Upload the files not listed yet as jobs of the server's ingestion pipeline; wait for them."""
        self.ensure_corpus(corpus, config)
        present = {d["filename"] for d in self.client.documents(corpus)}
        todo = [f for f in files if f.name not in present]
        done = 0
        for group in self._groups(todo):
            job_ids, rejected = self.submit(corpus, group, {})
            if rejected:  # a file the server refused would never be listed: fail now, saying which
                raise MMRAGError(f"upload refused: {rejected}")
            for job_id in job_ids:
                job = self.client.wait_job(job_id, timeout_s=self.job_timeout_s)
                if job["errors"]:
                    raise MMRAGError(f"ingestion failed: {job['errors']}")
            done += len(group)
            progress(done, len(todo), "")
        wanted = {f.name for f in files}
        listed = [d for d in self.client.documents(corpus) if d["filename"] in wanted]
        return {"documents": len(listed), "pages": sum(d["page_count"] for d in listed), "uploaded": len(todo)}

    def search(self, corpus: str, request: SearchRequest) -> dict[str, Any]:
        return self.client.search(corpus, request)

    def corpora(self) -> list[dict[str, Any]]:
        return self.client.corpora()

    def answer_events(self, corpus: str, body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        return self.client.answer_events(corpus, body)

    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]:
        from mmrag.generate.answer_service import final_answer

        return final_answer(self.answer_events(corpus, {"question": question, "top_k": top_k}))

    def close(self) -> None:
        self.client.close()
