"""The catalog's corpora: a name, the corpus's config and when it was made; its folder of files.

Lifecycle: one per :class:`mmrag.catalog.Catalog`, over its database; thread-safe.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from mmrag.catalog.schema import CORPUS_TABLES
from mmrag.config import CorpusConfig
from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.sqlite_db import SqliteDB

CORPUS_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def check_corpus_name(name: str) -> str:
    if not CORPUS_NAME.match(name or ""):
        raise InvalidInput(f"corpus name {name!r} is not allowed: use 1-63 characters of a-z, 0-9, '-' "
                           "and '_', starting with a letter or digit")
    return name


@dataclass(frozen=True, slots=True)
class CorpusRow:
    """One corpus as listed: its config and what it holds."""

    name: str
    config: CorpusConfig
    created_at: float  # unix time
    documents: int  # listed (fully indexed) documents
    pages: int  # their pages


class CorpusTable:
    """The ``corpora`` rows, and each corpus's folder (``<data>/corpora/<name>``: kept PDFs, page images)."""

    def __init__(self, db: SqliteDB, root: Path) -> None:
        self._db, self._root = db, root

    def create(self, name: str, config: CorpusConfig) -> None:
        check_corpus_name(name)
        try:
            self._db.execute("INSERT INTO corpora VALUES (?, ?, ?)", name, config.model_dump_json(), time.time())
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"corpus {name!r} already exists") from exc

    def config(self, name: str) -> CorpusConfig:
        """The corpus's config; NotFound (saying how to create it) for an unknown corpus."""
        rows = self._db.rows("SELECT config FROM corpora WHERE name = ?", name)
        if not rows:
            raise NotFound(f"unknown corpus {name!r}; create it first (POST /corpora or mmrag ingest --corpus)")
        return CorpusConfig.model_validate_json(rows[0][0])

    def exists(self, name: str) -> bool:
        return bool(self._db.rows("SELECT 1 FROM corpora WHERE name = ?", name))

    def listed(self) -> list[CorpusRow]:
        return self._corpora("")

    def summary(self, name: str) -> CorpusRow:
        """One corpus (NotFound if unknown)."""
        rows = self._corpora("WHERE c.name = ?", name)
        if not rows:
            self.config(name)  # raises the NotFound that says what to do
        return rows[0]

    def _corpora(self, where: str, *args: object) -> list[CorpusRow]:
        rows = self._db.rows(
            "SELECT c.name, c.config, c.created_at, COUNT(d.id), COALESCE(SUM(d.page_count), 0) FROM corpora c "
            f"LEFT JOIN documents d ON d.corpus = c.name {where} GROUP BY c.name ORDER BY c.name", *args)
        return [CorpusRow(n, CorpusConfig.model_validate_json(c), float(t), int(d), int(p)) for n, c, t, d, p in rows]

    def delete(self, name: str) -> None:
        """The corpus's rows in every table, then its folder."""
        self.config(name)
        with self._db.transaction() as db:
            for table, key in CORPUS_TABLES:
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))
        shutil.rmtree(self.folder(name), ignore_errors=True)

    def folder(self, name: str) -> Path:
        return self._root / name
