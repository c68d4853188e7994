"""Uploads become one job: check each file, keep the refused ones with their reason, submit the rest.

The one place of these steps for every shell: the REST upload route (after its async read and quota),
the CLI in-process (:mod:`cli.remote`; over REST the server does this) and blocking in-process ingest
(:class:`mmrag.jobs.blocking.BlockingIngest`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.config import IngestConfig
from mmrag.disk_space import disk_full, no_space
from mmrag.errors import InvalidInput, MMRAGError, NotFound, TooLarge
from mmrag.ingest.sniff import ACCEPTED, Kind
from mmrag.jobs.runner import JobRunner
from mmrag.jobs.writer import Upload

UploadCheck = Callable[[bytes, str], Kind]
"""Called as ``check(data, filename)`` before a job starts: the file's kind (decided here once and carried
with the job to plan), or the file's MMRAGError to refuse it."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A file refused before its job started (the API answers with the status of ``error``)."""

    filename: str
    error: MMRAGError  # what was wrong and what is allowed

    @property
    def code(self) -> str:
        return self.error.code

    @property
    def message(self) -> str:
        return self.error.message


@dataclass(frozen=True, slots=True)
class Submitted:
    """What became of an upload."""

    job_id: str | None  # the one job of the accepted files; None when no file was accepted
    refused: list[Refusal]  # in the files' order


def check_uploaded_file(data: bytes, name: str, max_bytes: int, config: IngestConfig | None = None) -> Kind:
    """The checks that need no parsing (made before a job starts): not empty, under the size limit,
    a supported type, container limits (:func:`mmrag.ingest.source.inspect_upload`); returns the kind
    (give it to the :class:`Upload`, so the plan stage does not sniff and check again). Corrupt or
    encrypted files are found while parsing and reported in the job."""
    if not data:
        raise InvalidInput(f"{name} is empty (0 bytes); upload a document ({ACCEPTED})")
    if len(data) > max_bytes:
        raise TooLarge(f"{name} is {len(data):,} bytes; the limit is {max_bytes:,} (MMRAG_INGEST__MAX_UPLOAD_BYTES)")
    from mmrag.ingest.source import inspect_upload  # the converters (pymupdf): when an upload comes, not at start

    return inspect_upload(data, name, config or IngestConfig(max_upload_bytes=max_bytes))


def upload_check(config: IngestConfig, *, isolation_up_front: bool = False) -> UploadCheck:
    """The synchronous checks (:func:`check_uploaded_file`; ZIP parts are parsed, so run them
    off an event loop). With ``isolation_up_front`` (the API when it converts in-process: no broker), a kind
    that needs a converter isolation this host cannot give is refused now (Unavailable) instead of in the job."""

    def check(data: bytes, name: str) -> Kind:
        kind = check_uploaded_file(data, name, config.max_upload_bytes, config)
        if isolation_up_front:
            from mmrag.ingest.convert import CONVERTER
            from mmrag.ingest.convert.sandbox import require_isolation

            if kind.name in CONVERTER:
                require_isolation(config.convert_isolation, f"converting {name}")
        return kind

    return check


def read_files(paths: Iterable[str | Path]) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each file, read when reached; NotFound for a path that is not a file."""
    for path in map(Path, paths):
        if not path.is_file():
            raise NotFound(f"no such file: {path}")
        yield path.name, path.read_bytes()


def submit_uploads(runner: JobRunner, corpus: str, files: Iterable[tuple[str, bytes] | Refusal],
                   metadata: dict[str, Any], check: UploadCheck, *, strict: bool = False) -> Submitted:
    """Check each ``(filename, bytes)`` and submit the accepted files, with ``metadata``, as one job.

    A file the caller could not read comes as its :class:`Refusal` and keeps its place among the refusals.
    ``strict``: the first refusal is raised as it is found, and no job starts (blocking in-process ingest)."""
    accepted: list[Upload] = []
    refused: list[Refusal] = []
    for item in files:
        refusal = item if isinstance(item, Refusal) else _checked(*item, metadata, check)
        if isinstance(refusal, Upload):
            accepted.append(refusal)
            continue
        if strict:
            raise refusal.error
        refused.append(refusal)
    if not accepted:
        return Submitted(None, refused)
    try:
        return Submitted(runner.submit(corpus, accepted), refused)
    except Exception as exc:
        if disk_full(exc):
            raise no_space(f"spooling {len(accepted)} uploaded file(s)") from exc
        raise


def _checked(name: str, data: bytes, metadata: dict[str, Any], check: UploadCheck) -> Upload | Refusal:
    try:
        kind = check(data, name)
    except MMRAGError as exc:
        return Refusal(name, exc)
    return Upload(name, data, dict(metadata), kind.name)
