"""A SQLite database shared by threads: one connection, one lock, WAL journal (catalog, job state, keys).

Every database lives in the data folder, which is made private (0700) with it; the database file is
0600 (SQLite gives its -wal and -shm files the same mode)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class SqliteDB:
    """Lifecycle: open once per process with its schema; ``close`` at exit. Thread-safe."""

    def __init__(self, path: Path, schema: str, *, timeout_s: float = 30.0) -> None:
        private_folder(path.parent)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        with contextlib.suppress(PermissionError):
            os.chmod(path, 0o600)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=timeout_s)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(schema)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def execute(self, sql: str, *args: Any) -> int:
        """One statement on its own; the rows it changed."""
        with self._lock:
            return self._db.execute(sql, args).rowcount

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction under the lock: committed at the end, rolled back on error."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


def private_folder(path: Path) -> None:
    """Make ``path`` (and its missing parents) and keep it 0700: only the service's user reads it."""
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):
        os.chmod(path, 0o700)
