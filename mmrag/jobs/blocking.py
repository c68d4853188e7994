"""Blocking ingest in-process: submit files as one job and wait for it (tests, benchmarks, the evaluation).

Every ingest is a job: these calls go through the same runner, checks and job states as an upload to
the API (:func:`mmrag.jobs.uploads.submit_uploads`, :func:`mmrag.jobs.wait.wait_job`); only the errors
come back differently, raised as the file's error class instead of listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrag.config import IngestConfig
from mmrag.errors import InvalidInput, error_for_code
from mmrag.jobs.model import FileState, FileStatus, JobStatus
from mmrag.jobs.runner import JobRunner
from mmrag.jobs.state import JobStore
from mmrag.jobs.uploads import read_files, submit_uploads, upload_check
from mmrag.jobs.wait import wait_job
from mmrag.jobs.writer import Upload
from mmrag.types import DocumentInfo

if TYPE_CHECKING:
    from mmrag.catalog import Catalog

Progress = Callable[[JobStatus], None]


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """One file ingested through a job (:meth:`BlockingIngest.file_bytes`)."""

    document: DocumentInfo
    created: bool  # False: the same bytes were already indexed (nothing redone)
    timings: dict[str, float]  # the job's stage timings (plan, parse, embed, write)


@dataclass(frozen=True, slots=True)
class BlockingIngest:
    """Ingest and wait, over the parts of a pipeline that runs jobs (``Pipeline.ingest``). Thread-safe as
    the runner and the stores are; a file's failure is raised once its job has finished."""

    runner: JobRunner
    jobs: JobStore
    catalog: Catalog
    config: IngestConfig

    def uploads(self, corpus: str, uploads: list[Upload], progress: Progress | None = None) -> JobStatus:
        """Run one job over uploads that passed the checks, and wait for it."""
        return self.wait(self.runner.submit(corpus, uploads), progress)

    def wait(self, job_id: str, progress: Progress | None = None) -> JobStatus:
        """Poll the job state until the job has finished; ``progress`` sees every change."""
        return wait_job(self.jobs, job_id, progress)

    def file_bytes(self, corpus: str, data: bytes, filename: str,
                   metadata: dict[str, Any] | None = None) -> IngestOutcome:
        """Index one file through a job; its error (corrupt, too large, ...) is raised here."""
        job = self._submit_and_wait(corpus, [(filename, data)], metadata, None)
        f = job.files[0]
        return IngestOutcome(self.document(job, f), f.state == FileState.DONE, dict(job.timings))

    def files(self, corpus: str, paths: Sequence[str | Path], metadata: dict[str, Any] | None = None,
              progress: Progress | None = None) -> list[DocumentInfo]:
        """Index files in one job; the first failed file's error is raised once the job has finished."""
        job = self._submit_and_wait(corpus, read_files(paths), metadata, progress)
        return [self.document(job, f) for f in job.files]

    def path(self, corpus: str, path: str | Path, metadata: dict[str, Any] | None = None) -> DocumentInfo:
        return self.files(corpus, [path], metadata)[0]

    def document(self, job: JobStatus, f: FileStatus) -> DocumentInfo:
        """The stored document of a finished job's file, or the error the file failed with."""
        if f.state in (FileState.DONE, FileState.EXISTS):
            return self.catalog.documents.get(job.corpus, f.document_id)
        raise error_for_code(f.error or "error", f"{f.filename}: {f.message or f.state.value}",
                             fallback=InvalidInput)

    def _submit_and_wait(self, corpus: str, files: Iterable[tuple[str, bytes]], metadata: dict[str, Any] | None,
                         progress: Progress | None) -> JobStatus:
        """The checks raise the first refused file's error before any job starts."""
        submitted = submit_uploads(self.runner, corpus, files, metadata or {}, upload_check(self.config),
                                   strict=True)
        if submitted.job_id is None:  # no file at all: a job of none, as before
            return self.uploads(corpus, [], progress)
        return self.wait(submitted.job_id, progress)
