"""What an evaluation reads from the application it runs against (:mod:`mmrag.application`: in this
process or over a running REST API): plain outcomes keyed by filename and page, read from the types both
return, so metrics never depend on how the results travelled; and the slices of a pipeline an in-process
evaluation uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mmrag.generate.answer_events import AnswerDone
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


__all__ = ["AnswerOutcome", "CorpusMaker", "FileIngest", "Hit", "SearchOutcome", "SearchPipeline"]


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
    def of(cls, result: SearchResult) -> SearchOutcome:
        hits = [Hit(e.filename, e.page, e.score, e.document_id, dict(e.scores)) for e in result.evidence]
        return cls(hits, dict(result.timings))


@dataclass(slots=True)
class AnswerOutcome:
    answer: str
    mode: str
    citations: list[tuple[str, int]]  # (filename, page)
    timings: dict[str, float]

    @classmethod
    def of(cls, done: AnswerDone) -> AnswerOutcome:
        """From the answer's final event."""
        citations = [(c.filename, c.page) for c in done.citations]
        timings = {k: float(v) for k, v in done.timings.items() if isinstance(v, int | float)}
        return cls(done.answer, done.mode, citations, timings)
