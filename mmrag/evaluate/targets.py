"""What an evaluation runs against: the in-process pipeline or a running REST API.

Both targets expose the same three calls to the runner (``prepare``,
``search``, ``answer``) and return plain outcomes keyed by filename and page,
so metrics never depend on how the results travelled.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mmrag.errors import Conflict, MMRAGError
from mmrag.types import DocumentInfo, SearchRequest, SearchResult

IngestProgress = Callable[[int, int, str], None]
"""Called as ``(done, total, filename)`` after each ingested file."""


@runtime_checkable
class SearchPipeline(Protocol):
    """The slice of ``mmrag.pipeline.Pipeline`` an evaluation needs."""

    def ensure_corpus(self, name: str, config: Any = None) -> object: ...

    def ingest_path(self, corpus: str, path: Path, metadata: dict[str, Any] | None = None) -> DocumentInfo: ...

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
    """Runs against a pipeline object (and optionally an answerer) in this process."""

    def __init__(self, pipeline: SearchPipeline, answerer: Answerer | None = None) -> None:
        self.pipeline = pipeline
        self.answerer = answerer
        self.description = "in-process"
        self.can_answer = answerer is not None

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

                self.pipeline.ensure_corpus(corpus, CorpusConfig.model_validate(config))
            else:
                self.pipeline.ensure_corpus(corpus)
        pages = 0
        for done, path in enumerate(files, start=1):
            info = self.pipeline.ingest_path(corpus, path, metadata={"source": "eval"})
            pages += info.page_count
            progress(done, len(files), path.name)
        optimize = getattr(self.pipeline, "optimize", None)
        if callable(optimize):  # build indexes / quantised prefetch vectors before searching
            optimize(corpus)
        return {"documents": len(files), "pages": pages}

    def search(self, corpus: str, request: SearchRequest) -> SearchOutcome:
        result = self.pipeline.search(corpus, request)
        hits = [Hit(e.filename, e.page, e.score, e.document_id, dict(e.scores)) for e in result.evidence]
        return SearchOutcome(hits, dict(result.timings))

    def answer(self, corpus: str, question: str, top_k: int) -> AnswerOutcome:
        if self.answerer is None:
            raise MMRAGError("this target has no answerer")
        return _answer_outcome(self.answerer.answer(corpus, question, top_k))


class RestTarget:
    """Runs against a running mmrag API over HTTP (httpx)."""

    def __init__(self, base_url: str, *, client: Any = None, timeout_s: float = 300.0, upload_batch: int = 8):
        import httpx

        self.client = client or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s)
        self.description = f"api {base_url}"
        self.can_answer = True
        self.upload_batch = upload_batch
        self.timeout_s = timeout_s

    def _check(self, response: Any, what: str) -> Any:
        if response.status_code >= 400:
            raise MMRAGError(f"{what} failed: HTTP {response.status_code}: {response.text[:300]}")
        return response.json() if response.content else {}

    def listed_filenames(self, corpus: str) -> set[str]:
        data = self._check(self.client.get(f"/corpora/{corpus}/documents"), "listing documents")
        docs: list[Any] = (data.get("documents") or data.get("items") or []) if isinstance(data, dict) else data
        return {str(d.get("filename")) for d in docs}

    def prepare(
        self,
        corpus: str,
        files: Sequence[Path],
        progress: IngestProgress,
        config: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"name": corpus, **({"config": config} if config else {})}
        response = self.client.post("/corpora", json=body)
        if response.status_code != 409:
            self._check(response, "creating the corpus")
        present = self.listed_filenames(corpus)
        todo = [f for f in files if f.name not in present]
        for start in range(0, len(todo), self.upload_batch):
            batch = todo[start : start + self.upload_batch]
            parts = [("files", (p.name, p.read_bytes(), "application/octet-stream")) for p in batch]
            data = self._check(self.client.post(f"/corpora/{corpus}/documents", files=parts), "uploading documents")
            errors = data.get("errors") if isinstance(data, dict) else None
            if errors:  # a file the server refused would never be listed: fail now, saying which
                raise MMRAGError(f"upload refused: {errors}")
        wanted = {f.name for f in files}
        deadline = time.monotonic() + self.timeout_s
        while True:  # uploads may be asynchronous jobs: wait until every file is listed
            listed = self.listed_filenames(corpus) & wanted
            progress(len(listed), len(wanted), "")
            if listed == wanted:
                return {"documents": len(files), "uploaded": len(todo)}
            if time.monotonic() > deadline:
                raise MMRAGError(f"documents not listed after {self.timeout_s}s: {sorted(wanted - listed)[:5]}")
            time.sleep(0.5)

    def search(self, corpus: str, request: SearchRequest) -> SearchOutcome:
        body: dict[str, Any] = {"query": request.query, "top_k": request.top_k, "spaces": request.spaces}
        for key in ("weights", "fusion", "rrf_k"):
            if getattr(request, key) is not None:
                body[key] = getattr(request, key)
        if request.document_ids is not None:
            body["document_ids"] = request.document_ids
        data = self._check(self.client.post(f"/corpora/{corpus}/search", json=body), "search")
        hits = [
            Hit(
                filename=str(r.get("document", r.get("filename", ""))),
                page=int(r["page"]),
                score=float(r.get("score", 0.0)),
                document_id=str(r.get("document_id", "")),
                scores={k: float(v) for k, v in (r.get("scores") or {}).items()},
            )
            for r in data.get("results", [])
        ]
        return SearchOutcome(hits, {k: float(v) for k, v in (data.get("timings") or {}).items()})

    def answer(self, corpus: str, question: str, top_k: int) -> AnswerOutcome:
        body = {"question": question, "top_k": top_k}
        response = self.client.post(f"/corpora/{corpus}/answer", json=body)
        if response.status_code >= 400:
            self._check(response, "answer")
        if "text/event-stream" in response.headers.get("content-type", ""):
            return _answer_outcome(last_sse_json(response.text, key="answer"))
        return _answer_outcome(response.json())


class StreamingAnswerer:
    """Adapts a service with ``answer_stream(corpus, question, top_k) -> events`` to :class:`Answerer`.

    The final event with ``event == "done"`` carries ``answer``, ``mode``, ``citations``
    (objects or dicts with ``filename`` and ``page``) and ``timings``; an ``error`` event raises.
    """

    def __init__(self, service: Any) -> None:
        self.service = service

    def answer(self, corpus: str, question: str, top_k: int) -> dict[str, Any]:
        for event in self.service.answer_stream(corpus, question, top_k):
            kind = getattr(event, "event", None)
            if kind == "error":
                raise MMRAGError(f"answer failed: {getattr(event, 'code', '')}: {getattr(event, 'message', '')}")
            if kind == "done":
                citations = [
                    c if isinstance(c, dict) else {"filename": c.filename, "page": c.page} for c in event.citations
                ]
                return {
                    "answer": event.answer,
                    "mode": event.mode,
                    "citations": citations,
                    "timings": dict(event.timings),
                }
        raise MMRAGError("the answer stream ended without a final event")


def last_sse_json(text: str, key: str) -> dict[str, Any]:
    """The last ``data:`` JSON object of an SSE body that holds ``key``."""
    found: dict[str, Any] = {}
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                data = json.loads(line[5:].strip())
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and key in data:
                found = data
    return found
