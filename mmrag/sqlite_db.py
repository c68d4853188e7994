"""A SQLite database shared by threads: one connection, one lock, WAL journal (catalog, job state)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any


class SqliteDB:
    """Lifecycle: open once per process with its schema; ``close`` at exit. Thread-safe."""

    def __init__(self, path: Path, schema: str, *, timeout_s: float = 30.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=timeout_s)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(schema)
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()
