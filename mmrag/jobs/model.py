"""Typed messages of the job system: work items passed between stages and the job status read by shells."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

Stage = Literal["plan", "parse", "embed", "write", "commit"]
"""Stages and the queue each runs on: plan/parse -> ``cpu``, embed -> ``gpu``, write/commit -> ``write``."""

QUEUE_OF: dict[str, str] = {"plan": "cpu", "parse": "cpu", "embed": "gpu", "write": "write", "commit": "write"}


class JobState(enum.StrEnum):
    QUEUED = "queued"  # created, nothing finished yet
    RUNNING = "running"  # some work done
    DONE = "done"  # every file indexed, already present, or failed with a reason (at least one not failed)
    FAILED = "failed"  # every file failed
    CANCELLED = "cancelled"  # stopped on request; finished files stay indexed


class FileState(enum.StrEnum):
    QUEUED = "queued"  # spooled, not planned yet
    RUNNING = "running"  # planned into batches
    DONE = "done"  # indexed (its catalog row written)
    EXISTS = "exists"  # the same bytes were already in the corpus
    FAILED = "failed"  # bad file; ``error``/``message`` say why
    CANCELLED = "cancelled"


FINISHED_FILE = frozenset({FileState.DONE, FileState.EXISTS, FileState.FAILED, FileState.CANCELLED})
FINISHED_JOB = frozenset({JobState.DONE, JobState.FAILED, JobState.CANCELLED})


@dataclass(frozen=True, slots=True)
class Work:
    """One unit of work: ids only (the payload lives in the spool), so a message can be re-sent safely."""

    stage: str  # one of Stage
    job_id: str
    file: int  # index of the file within its job
    batch: int = -1  # page batch (-1: the whole file, e.g. plan)
    info: dict[str, Any] = field(default_factory=dict)  # commit: outcome; write: stage timings

    def as_args(self) -> list[Any]:
        return [self.job_id, self.file, self.batch, self.info]

    @property
    def queue(self) -> str:
        return QUEUE_OF[self.stage]


@dataclass(slots=True)
class FileStatus:
    index: int
    filename: str
    document_id: str
    size_bytes: int
    state: FileState
    pages: int = 0  # 0 until planned
    batches: int = 0
    batches_done: int = 0
    pages_done: int = 0  # pages of written batches
    error: str | None = None  # stable error code (corrupt_document, too_large, ...)
    message: str | None = None  # what was wrong


@dataclass(slots=True)
class JobStatus:
    id: str
    corpus: str
    state: JobState
    created_at: float
    updated_at: float
    finished_at: float | None
    files: list[FileStatus]
    timings: dict[str, float]  # stage -> summed seconds over batches (plan, parse, embed, write)

    @property
    def pages_total(self) -> int:
        return sum(f.pages for f in self.files if f.state != FileState.EXISTS)

    @property
    def pages_done(self) -> int:
        return sum(f.pages_done for f in self.files if f.state not in (FileState.FAILED, FileState.EXISTS))

    @property
    def pages_failed(self) -> int:
        return sum(f.pages for f in self.files if f.state == FileState.FAILED)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_JOB

    def summary(self) -> dict[str, Any]:
        """Plain data (the shape of the REST job, without URLs) for shells that do not use the API models."""
        return {"id": self.id, "corpus": self.corpus, "state": self.state.value, "pages_total": self.pages_total,
                "pages_done": self.pages_done, "pages_failed": self.pages_failed,
                "files": [{"index": f.index, "filename": f.filename, "document_id": f.document_id,
                           "state": f.state.value, "pages": f.pages, "pages_done": f.pages_done, "error": f.error,
                           "message": f.message} for f in self.files],
                "errors": [{"filename": f.filename, "error": f.error, "message": f.message}
                           for f in self.files if f.error],
                "timings": dict(self.timings)}

