"""Typed messages of the job system: work items passed between stages and the job status read by shells."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from mmrag.config import CorpusConfig
from mmrag.types import Page

Stage = Literal["plan", "parse", "embed", "write", "commit"]
"""Stages and the queue each runs on: plan/parse -> ``cpu``, embed -> ``gpu``, write/commit -> ``write``."""

QUEUE_OF: dict[Stage, str] = {"plan": "cpu", "parse": "cpu", "embed": "gpu", "write": "write", "commit": "write"}


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
class StageTimings:
    """parse -> embed -> write: what a page batch's stages have taken so far."""

    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds (parse, embed)


@dataclass(frozen=True, slots=True)
class Planned:
    """plan -> commit: the file is good; this many pages in this many batches."""

    pages: int
    batches: int
    timings: dict[str, float] = field(default_factory=dict)  # {"plan": seconds}


@dataclass(frozen=True, slots=True)
class Failed:
    """any stage -> commit: the file failed (bad bytes, or a stage gave up); the job goes on."""

    error: str  # stable error code (corrupt_document, unavailable, internal_error, ...)
    message: str  # what was wrong


WorkInfo = StageTimings | Planned | Failed
_INFO_KINDS: dict[str, type[StageTimings] | type[Planned] | type[Failed]] = {
    "timings": StageTimings, "planned": Planned, "failed": Failed}


def info_to_dict(info: WorkInfo) -> dict[str, Any]:
    """JSON-safe form (the Celery wire format), tagged with its kind."""
    kind = next(k for k, cls in _INFO_KINDS.items() if isinstance(info, cls))
    return {"kind": kind, **asdict(info)}


def info_from_dict(data: dict[str, Any]) -> WorkInfo:
    """Inverse of :func:`info_to_dict`; untagged dicts (messages of an older version) by their keys,
    whose fields this version dropped are ignored (``Planned.media_type``)."""
    data = dict(data)
    kind = data.pop("kind", None) or ("failed" if "error" in data else "planned" if "pages" in data else "timings")
    cls = _INFO_KINDS[kind]
    return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class Work:
    """One unit of work: ids only (the payload lives in the spool), so a message can be re-sent safely."""

    stage: Stage
    job_id: str
    file: int  # index of the file within its job
    batch: int = -1  # page batch (-1: the whole file, e.g. plan)
    info: WorkInfo = field(default_factory=StageTimings)  # what the previous stage tells the next one

    def as_args(self) -> list[Any]:
        """The task arguments on the wire (JSON-safe); :meth:`from_args` reads them back."""
        return [self.job_id, self.file, self.batch, info_to_dict(self.info)]

    @classmethod
    def from_args(cls, stage: Stage, job_id: str, file: int, batch: int, info: dict[str, Any]) -> Work:
        return cls(stage, job_id, file, batch, info_from_dict(info))

    @property
    def queue(self) -> str:
        return QUEUE_OF[self.stage]

    @property
    def timings(self) -> dict[str, float]:
        """Stage timings carried so far (none for a failure)."""
        return {} if isinstance(self.info, Failed) else dict(self.info.timings)


@dataclass(frozen=True, slots=True)
class Manifest:
    """What the spool keeps per uploaded file of a job (``manifest.json``), read by every stage."""

    corpus: str
    filename: str
    document_id: str
    blob: str  # spool key of the bytes (their sha256)
    size_bytes: int
    metadata: dict[str, Any]  # stored with every page
    spaces: list[str]  # the corpus's spaces when the job started
    corpus_config: CorpusConfig | None = None  # per-corpus options for the spaces (None: defaults)
    kind: str | None = None  # the kind the upload checks found (they passed); None: plan sniffs and checks

    def to_dict(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__}
        data["corpus_config"] = self.corpus_config.model_dump(mode="json") if self.corpus_config else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        config = data.get("corpus_config")
        return cls(**{**data, "corpus_config": CorpusConfig.model_validate(config) if config else None})


@dataclass(slots=True)
class ParsedBatch:
    """parse -> embed/write: one batch's pages without their PNGs (those are spooled apart)."""

    media_type: str
    pages: list[Page]


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

    def summary(self, base_url: str = "") -> dict[str, Any]:
        """The job as plain data: the REST job's shape (``JobOut``), the same in-process and over REST.
        ``base_url``: MMRAG_API__PUBLIC_URL, before its events URL."""
        return {"id": self.id, "corpus": self.corpus, "state": self.state.value, "pages_total": self.pages_total,
                "pages_done": self.pages_done, "pages_failed": self.pages_failed,
                "files": [{"index": f.index, "filename": f.filename, "document_id": f.document_id,
                           "state": f.state.value, "pages": f.pages, "pages_done": f.pages_done, "error": f.error,
                           "message": f.message} for f in self.files],
                "errors": [{"filename": f.filename, "error": f.error or "error", "message": f.message or ""}
                           for f in self.files if f.error],
                "timings": {k: round(v, 4) for k, v in self.timings.items()}, "created_at": self.created_at,
                "updated_at": self.updated_at, "finished_at": self.finished_at,
                "events_url": f"{base_url.rstrip('/')}/jobs/{self.id}/events"}

