"""What an evaluation reads from the backend it runs against (:mod:`mmrag.backends`: the in-process
pipeline or a running REST API): plain outcomes keyed by filename and page, read from the REST shapes
both backends return, so metrics never depend on how the results travelled; and the slices of a
pipeline an in-process evaluation uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mmrag.backends import Answerer
from mmrag.jobs.model import JobStatus
from mmrag.types import DocumentInfo, SearchRequest, SearchResult


class CorpusMaker(Protocol):
    """Creates a corpus unless it exists (:class:`mmrag.corpora.Corpora`)."""

    def ensure_corpus(self, name: str, config: Any = None) -> object: ...


class FileIngest(Protocol):
    """Blocking ingest (:class:`mmrag.jobs.blocking.BlockingIngest`, ``Pipeline.ingest``)."""

    def files(self, corpus: str, paths: Sequence[Path], metadata: dict[str, Any] | None = None,
              progress: Callable[[JobStatus], None] | None = None) -> list[DocumentInfo]: ...


@runtime_checkable
class SearchPipeline(Protocol):
    """The slice of ``mmrag.pipeline.Pipeline`` an in-process evaluation needs."""

    @property
    def corpora(self) -> CorpusMaker: ...

    @property
    def ingest(self) -> FileIngest: ...

    def search(self, corpus: str, request: SearchRequest) -> SearchResult: ...


__all__ = ["AnswerOutcome", "Answerer", "CorpusMaker", "FileIngest", "Hit", "SearchOutcome", "SearchPipeline"]


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
    timings: dict[str, float]  # stage -> seconds, as reported by the backend

    @classmethod
    def of(cls, body: dict[str, Any]) -> SearchOutcome:
        """From the REST search body (``results``, ``timings``)."""
        hits = [Hit(str(r["document"]), int(r["page"]), float(r["score"]), str(r["document_id"]),
                    {k: float(v) for k, v in r["scores"].items()}) for r in body["results"]]
        return cls(hits, {k: float(v) for k, v in body["timings"].items()})


@dataclass(slots=True)
class AnswerOutcome:
    answer: str
    mode: str
    citations: list[tuple[str, int]]  # (filename, page)
    timings: dict[str, float]

    @classmethod
    def of(cls, data: dict[str, Any]) -> AnswerOutcome:
        """From the final answer (``answer``, ``mode``, ``citations``, ``timings``)."""
        citations = [(str(c.get("filename", "")), int(c.get("page", 0))) for c in data.get("citations", [])]
        timings = {k: float(v) for k, v in (data.get("timings") or {}).items() if isinstance(v, int | float)}
        return cls(str(data.get("answer", "")), str(data.get("mode", "")), citations, timings)
