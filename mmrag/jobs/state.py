"""Job state in SQLite (``<data_dir>/jobs.sqlite3``): jobs, their files, and the batches written.

Only the process that owns the store writes here (the embedded runner or the write-queue
consumer), so every transition is serialised; readers (the REST API, the CLI) only read.
Lifecycle: one :class:`JobStore` per process, thread-safe (one connection, one lock, WAL).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.errors import NotFound
from mmrag.jobs.model import FileState, FileStatus, JobState, JobStatus
from mmrag.sqlite_db import SqliteDB

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, corpus TEXT NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL,
    updated_at REAL NOT NULL, finished_at REAL, timings TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_corpus ON jobs (corpus, created_at);
CREATE TABLE IF NOT EXISTS job_files (
    job_id TEXT NOT NULL, idx INTEGER NOT NULL, filename TEXT NOT NULL, document_id TEXT NOT NULL,
    blob TEXT NOT NULL, size_bytes INTEGER NOT NULL, state TEXT NOT NULL, pages INTEGER NOT NULL,
    batches INTEGER NOT NULL, error TEXT, message TEXT, PRIMARY KEY (job_id, idx));
CREATE TABLE IF NOT EXISTS job_batches (
    job_id TEXT NOT NULL, idx INTEGER NOT NULL, batch INTEGER NOT NULL, pages INTEGER NOT NULL,
    PRIMARY KEY (job_id, idx, batch));
CREATE TABLE IF NOT EXISTS deletions (
    corpus TEXT NOT NULL, document_id TEXT NOT NULL, PRIMARY KEY (corpus, document_id));
"""


@dataclass(frozen=True, slots=True)
class NewFile:
    """A file as accepted at upload (after the synchronous checks)."""

    filename: str
    document_id: str
    blob: str  # spool key (sha256 of the bytes)
    size_bytes: int
    state: FileState = FileState.QUEUED  # EXISTS when the corpus already holds these bytes


class JobStore(SqliteDB):
    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir / "jobs.sqlite3", _SCHEMA)

    def _exec(self, sql: str, *args: Any) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # writes (owner only) ----------------------------------------------------------
    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def create_job(self, job_id: str, corpus: str, files: list[NewFile]) -> None:
        now = time.time()
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, NULL, '{}')",
                             (job_id, corpus, JobState.QUEUED.value, now, now))
            for i, f in enumerate(files):
                self._db.execute("INSERT INTO job_files VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, NULL, NULL)",
                                 (job_id, i, f.filename, f.document_id, f.blob, f.size_bytes, f.state.value))
            self._db.execute("COMMIT")

    def set_planned(self, job_id: str, file: int, pages: int, batches: int) -> None:
        self._exec("UPDATE job_files SET state = ?, pages = ?, batches = ? WHERE job_id = ? AND idx = ? AND state = ?",
                   FileState.RUNNING.value, pages, batches, job_id, file, FileState.QUEUED.value)
        self.touch(job_id, JobState.RUNNING)

    def set_file_state(self, job_id: str, file: int, state: FileState, error: str | None = None,
                       message: str | None = None) -> None:
        self._exec("UPDATE job_files SET state = ?, error = ?, message = ? WHERE job_id = ? AND idx = ?",
                   state.value, error, message, job_id, file)
        self.touch(job_id)

    def mark_batch_written(self, job_id: str, file: int, batch: int, pages: int) -> bool:
        """Record a written batch; False if it was already recorded (a redelivered message)."""
        new = self._exec("INSERT OR IGNORE INTO job_batches VALUES (?, ?, ?, ?)", job_id, file, batch, pages) > 0
        self.touch(job_id, JobState.RUNNING)
        return new

    def add_timings(self, job_id: str, timings: dict[str, float]) -> None:
        with self._lock:
            rows = self._db.execute("SELECT timings FROM jobs WHERE id = ?", (job_id,)).fetchall()
            if not rows:
                return
            total = json.loads(rows[0][0])
            for k, v in timings.items():
                total[k] = total.get(k, 0.0) + v
            self._db.execute("UPDATE jobs SET timings = ? WHERE id = ?", (json.dumps(total), job_id))

    def touch(self, job_id: str, state: JobState | None = None) -> None:
        now = time.time()
        if state is None:
            self._exec("UPDATE jobs SET updated_at = ? WHERE id = ?", now, job_id)
        else:  # QUEUED -> RUNNING only; finished states are set by finish()
            self._exec("UPDATE jobs SET updated_at = ?, state = ? WHERE id = ? AND state IN (?, ?)",
                       now, state.value, job_id, JobState.QUEUED.value, JobState.RUNNING.value)

    def finish(self, job_id: str, state: JobState) -> None:
        now = time.time()
        self._exec("UPDATE jobs SET state = ?, updated_at = ?, finished_at = ? WHERE id = ?",
                   state.value, now, now, job_id)

    def add_deletion(self, corpus: str, doc_id: str) -> None:
        """A document deletion begins (the writer finishes it after a crash: :meth:`JobWriter.recover`)."""
        self._exec("INSERT OR IGNORE INTO deletions (corpus, document_id) VALUES (?, ?)", corpus, doc_id)

    def clear_deletion(self, corpus: str, doc_id: str) -> None:
        self._exec("DELETE FROM deletions WHERE corpus = ? AND document_id = ?", corpus, doc_id)

    # reads ---------------------------------------------------------------------------
    def deletions(self) -> list[tuple[str, str]]:
        """(corpus, document id) of the deletions begun and not finished."""
        return [(r[0], r[1]) for r in self.rows("SELECT corpus, document_id FROM deletions ORDER BY corpus")]

    def written_batches(self, job_id: str, file: int) -> set[int]:
        return {r[0] for r in self.rows("SELECT batch FROM job_batches WHERE job_id = ? AND idx = ?", job_id, file)}

    def blob_of(self, job_id: str, file: int) -> str:
        return str(self.rows("SELECT blob FROM job_files WHERE job_id = ? AND idx = ?", job_id, file)[0][0])

    def blob_in_use(self, blob: str) -> bool:
        """Whether an unfinished job still needs the spooled bytes ``blob``."""
        return bool(self.rows("SELECT 1 FROM job_files f JOIN jobs j ON j.id = f.job_id WHERE f.blob = ? "
                               "AND j.state IN (?, ?) LIMIT 1", blob, JobState.QUEUED.value, JobState.RUNNING.value))

    def status(self, job_id: str) -> JobStatus:
        rows = self.rows("SELECT id, corpus, state, created_at, updated_at, finished_at, timings FROM jobs "
                          "WHERE id = ?", job_id)
        if not rows:
            raise NotFound(f"unknown job {job_id!r}")
        return self._status(rows[0])

    def list_jobs(self, corpus: str, limit: int = 100) -> list[JobStatus]:
        rows = self.rows("SELECT id, corpus, state, created_at, updated_at, finished_at, timings FROM jobs "
                          "WHERE corpus = ? ORDER BY created_at DESC LIMIT ?", corpus, limit)
        return [self._status(r) for r in rows]

    def unfinished(self) -> list[str]:
        return [r[0] for r in self.rows("SELECT id FROM jobs WHERE state IN (?, ?) ORDER BY created_at",
                                         JobState.QUEUED.value, JobState.RUNNING.value)]

    def state_counts(self) -> dict[str, int]:
        """Jobs per state (for metrics)."""
        return {s: int(n) for s, n in self.rows("SELECT state, COUNT(*) FROM jobs GROUP BY state")}

    def finished_since(self, since: float) -> list[tuple[float, dict[str, float]]]:
        """(finished_at, stage timings) of the jobs finished after ``since``, oldest first (for metrics)."""
        rows = self.rows("SELECT finished_at, timings FROM jobs WHERE finished_at > ? ORDER BY finished_at", since)
        return [(float(t), json.loads(timings)) for t, timings in rows]

    def _status(self, row: tuple[Any, ...]) -> JobStatus:
        job_id, corpus, state, created, updated, finished, timings = row
        done = {(i, ): (n, p) for i, n, p in self.rows(
            "SELECT idx, COUNT(*), COALESCE(SUM(pages), 0) FROM job_batches WHERE job_id = ? GROUP BY idx", job_id)}
        files = []
        for idx, name, doc_id, size, fstate, pages, batches, error, message in self.rows(
                "SELECT idx, filename, document_id, size_bytes, state, pages, batches, error, message "
                "FROM job_files WHERE job_id = ? ORDER BY idx", job_id):
            n, p = done.get((idx, ), (0, 0))
            files.append(FileStatus(idx, name, doc_id, size, FileState(fstate), pages, batches, n, p, error, message))
        return JobStatus(job_id, corpus, JobState(state), created, updated, finished, files, json.loads(timings))
