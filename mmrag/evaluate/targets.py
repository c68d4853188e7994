"""What an evaluation runs against: the in-process pipeline or a running REST API.

Both targets expose the same three calls to the runner (``prepare``,
``search``, ``answer``) and return plain outcomes keyed by filename and page,
so metrics never depend on how the results travelled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mmrag.errors import Conflict, MMRAGError
from mmrag.jobs.model import FINISHED_FILE, JobStatus
from mmrag.types import DocumentInfo, SearchRequest, SearchResult

IngestProgress = Callable[[int, int, str], None]
"""Called as ``(done, total, filename)`` as files are ingested."""


class CorpusMaker(Protocol):
    """Creates a corpus unless it exists (:class:`mmrag.corpora.Corpora`)."""

    def ensure_corpus(self, name: str, config: Any = None) -> object: ...


class IngestFiles(Protocol):
    def __call__(self, corpus: str, paths: Sequence[Path], metadata: dict[str, Any] | None = None,
                 progress: Callable[[JobStatus], None] | None = None) -> list[DocumentInfo]:
        """Index the files (one ingestion job) and wait; ``progress`` is called with the job's status."""
        ...


class FileIngest(Protocol):
    """Blocking ingest (:class:`mmrag.jobs.blocking.BlockingIngest`, ``Pipeline.ingest``)."""

    def files(self, corpus: str, paths: Sequence[Path], metadata: dict[str, Any] | None = None,
              progress: Callable[[JobStatus], None] | None = None) -> list[DocumentInfo]: ...


SearchFn = Callable[[str, SearchRequest], SearchResult]


@runtime_checkable
class SearchPipeline(Protocol):
    """The slice of ``mmrag.pipeline.Pipeline`` an in-process evaluation needs."""

    @property
    def corpora(self) -> CorpusMaker: ...

    @property
    def ingest(self) -> FileIngest: ...

    def search(self, corpus: str, request: SearchRequest) -> SearchResult: ...


class Answerer(Protocol):
    """The answer service: returns ``{"answer", "mode", "citations": [{"filename", "page"}], "timings"}``."""

    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]: ...


@dataclass(slots=True)
class Hit:
    """One retrieved page as the evaluation sees it."""

    filename: str
    page: int  # 1-based
    score: float
    document_id: str = ""
    scores: dict[str, float] = field(default_factory=dict)  # per space


@dataclass(slots=True)
class SearchOutcome:
    hits: list[Hit]  # in rank order, as returned
    timings: dict[str, float]  # stage -> seconds, as reported by the target


@dataclass(slots=True)
class AnswerOutcome:
    answer: str
    mode: str
    citations: list[tuple[str, int]]  # (filename, page)
    timings: dict[str, float]


class EvalTarget(Protocol):
    """Something a suite can be run against."""

    description: str  # e.g. "in-process" or "api http://127.0.0.1:8000"
    can_answer: bool

    def prepare(
        self,
        corpus: str,
        files: Sequence[Path],
        progress: IngestProgress,
        config: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create the corpus (with ``config`` if new) and make sure every file is ingested."""
        ...

    def search(self, corpus: str, request: SearchRequest) -> SearchOutcome: ...

    def answer(self, corpus: str, question: str, top_k: int) -> AnswerOutcome: ...


def _answer_outcome(data: dict[str, Any]) -> AnswerOutcome:
    citations = [(str(c.get("filename", "")), int(c.get("page", 0))) for c in data.get("citations", [])]
    timings = {k: float(v) for k, v in (data.get("timings") or {}).items() if isinstance(v, int | float)}
    return AnswerOutcome(str(data.get("answer", "")), str(data.get("mode", "")), citations, timings)


class InProcessTarget:
    """Runs against this process's corpora, ingestion and search (and optionally an answerer)."""

    def __init__(self, corpora: CorpusMaker, ingest_files: IngestFiles, search: SearchFn,
                 answerer: Answerer | None = None) -> None:
        self.corpora, self.ingest_files, self.search_fn = corpora, ingest_files, search
        self.answerer = answerer
        self.description = "in-process"
        self.can_answer = answerer is not None

    @classmethod
    def of(cls, pipeline: SearchPipeline, answerer: Answerer | None = None) -> InProcessTarget:
        return cls(pipeline.corpora, pipeline.ingest.files, pipeline.search, answerer)

    def prepare(
        self,
        corpus: str,
        files: Sequence[Path],
        progress: IngestProgress,
        config: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        with contextlib.suppress(Conflict):  # pipelines whose ensure_corpus is not idempotent
            if config:
                from mmrag.config import CorpusConfig

                self.corpora.ensure_corpus(corpus, CorpusConfig.model_validate(config))
            else:
                self.corpora.ensure_corpus(corpus)
        def on_job(job: JobStatus) -> None:
            progress(sum(f.state in FINISHED_FILE for f in job.files), len(files), "")

        docs = self.ingest_files(corpus, list(files), {"source": "eval"}, on_job)
        progress(len(docs), len(files), "")
        return {"documents": len(docs), "pages": sum(d.page_count for d in docs)}

    def search(self, corpus: str, request: SearchRequest) -> SearchOutcome:
        result = self.search_fn(corpus, request)
        hits = [Hit(e.filename, e.page, e.score, e.document_id, dict(e.scores)) for e in result.evidence]
        return SearchOutcome(hits, dict(result.timings))

    def answer(self, corpus: str, question: str, top_k: int) -> AnswerOutcome:
        if self.answerer is None:
            raise MMRAGError("this target has no answerer")
        return _answer_outcome(self.answerer.answer(corpus, question, top_k))


class RestTarget:
    """Runs against a running mmrag API over HTTP, through the one REST client (:mod:`mmrag.rest_client`)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout_s: float = 300.0,
                 upload_batch: int = 8) -> None:
        from mmrag.rest_client import Client

        self.client = Client(base_url, api_key, timeout_s=timeout_s)
        self.description = f"api {base_url}"
        self.can_answer = True
        self.upload_batch = upload_batch
        self.timeout_s = timeout_s

    def close(self) -> None:
        self.client.close()

    def prepare(
        self,
        corpus: str,
        files: Sequence[Path],
        progress: IngestProgress,
        config: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Upload the files not listed yet as jobs of the server's ingestion pipeline; wait for them."""
        self.client.ensure_corpus(corpus, config)
        present = {d["filename"] for d in self.client.documents(corpus)}
        todo = [f for f in files if f.name not in present]
        for start in range(0, len(todo), self.upload_batch):
            batch = todo[start : start + self.upload_batch]
            body = self.client.upload(corpus, [(p.name, p.read_bytes()) for p in batch])
            if body.get("errors"):  # a file the server refused would never be listed: fail now, saying which
                raise MMRAGError(f"upload refused: {body['errors']}")
            job = self.client.wait_job(body["job"]["id"], timeout_s=self.timeout_s)
            if job["errors"]:
                raise MMRAGError(f"ingestion failed: {job['errors']}")
            progress(start + len(batch), len(todo), "")
        wanted = {f.name for f in files}
        listed = [d for d in self.client.documents(corpus) if d["filename"] in wanted]
        return {"documents": len(listed), "pages": sum(d["page_count"] for d in listed), "uploaded": len(todo)}

    def search(self, corpus: str, request: SearchRequest) -> SearchOutcome:
        data = self.client.search(corpus, request)
        hits = [Hit(str(r["document"]), int(r["page"]), float(r["score"]), str(r["document_id"]),
                    {k: float(v) for k, v in r["scores"].items()}) for r in data["results"]]
        return SearchOutcome(hits, {k: float(v) for k, v in data["timings"].items()})

    def answer(self, corpus: str, question: str, top_k: int) -> AnswerOutcome:
        from mmrag.generate.answer_service import final_answer

        return _answer_outcome(final_answer(self.client.answer_events(corpus, {"question": question, "top_k": top_k})))
