"""API keys (``<data_dir>/keys.sqlite3``): who may do what, on which corpus.

A key is ``mmrag_<id>_<secret>``: ``id`` (12 hex) finds the row, the whole key is stored only as
its sha256 and compared in constant time. Scopes: ``admin`` (everything, keys and corpus
creation included; no corpus), ``write`` (upload, delete documents, run jobs and evaluations on
its corpus; it never creates one) and ``read`` (list, search, answer, page images, job progress,
reports on its corpus). ``write`` includes ``read``. A corpus's keys are revoked when it is deleted
(:meth:`KeyStore.revoke_corpus`), so a corpus created later under the same name does not inherit
them. The file is 0600. Pure bookkeeping: the shells map it to HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mmrag.errors import InvalidInput, NotFound
from mmrag.sqlite_db import SqliteDB

Scope = Literal["admin", "write", "read"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")  # each includes the ones before it
KEY_PATTERN = re.compile(r"^mmrag_([0-9a-f]{12})_[A-Za-z0-9_-]{20,100}$")
CORPUS_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL,
    scope TEXT NOT NULL,
    corpus TEXT,
    name TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);
"""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key as listed: never its secret."""

    id: str  # 12 hex characters, also the visible part of the key
    scope: Scope
    corpus: str | None  # None for admin keys
    name: str  # free text for people ("ci", "alice's laptop")
    created_at: float
    revoked_at: float | None

    @property
    def prefix(self) -> str:
        """What listings show of the key: enough to recognise it, useless to use it."""
        return f"mmrag_{self.id}_"

    def allows(self, scope: Scope, corpus: str | None) -> bool:
        """Whether this key may act with ``scope`` on ``corpus`` (None: not about one corpus)."""
        if self.revoked_at is not None:
            return False
        if self.scope == "admin":
            return True
        if scope == "admin":
            return False
        return SCOPES.index(self.scope) >= SCOPES.index(scope) and (corpus is None or corpus == self.corpus)

    def sees(self, corpus: str) -> bool:
        """Whether listings may show this corpus (and its jobs, evaluations) to the key."""
        return self.allows("read", corpus)


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just created: the only time its secret exists in the clear."""

    key: ApiKey
    secret: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class KeyStore(SqliteDB):
    """Lifecycle: one per process that checks or manages keys; ``close`` at exit. Thread-safe."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir / "keys.sqlite3", _SCHEMA)

    def create(self, scope: Scope, corpus: str | None = None, name: str = "") -> NewKey:
        if scope not in SCOPES:
            raise InvalidInput(f"unknown scope {scope!r}; allowed: {', '.join(SCOPES)}")
        if scope == "admin" and corpus is not None:
            raise InvalidInput("an admin key covers every corpus; do not give one")
        if scope != "admin" and (corpus is None or not CORPUS_NAME.match(corpus)):
            raise InvalidInput(f"a {scope} key needs a corpus name (1-63 characters of a-z, 0-9, '-', '_')")
        key_id = secrets.token_hex(6)
        secret = f"mmrag_{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(id=key_id, scope=scope, corpus=corpus, name=name[:200], created_at=time.time(), revoked_at=None)
        self.rows("INSERT INTO api_keys (id, hash, scope, corpus, name, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                   key.id, _digest(secret), scope, corpus, key.name, key.created_at)
        return NewKey(key, secret)

    def list(self) -> list[ApiKey]:
        rows = self.rows("SELECT id, scope, corpus, name, created_at, revoked_at FROM api_keys ORDER BY created_at")
        return [ApiKey(*r) for r in rows]

    def get(self, key_id: str) -> ApiKey:
        rows = self.rows("SELECT id, scope, corpus, name, created_at, revoked_at FROM api_keys WHERE id = ?", key_id)
        if not rows:
            raise NotFound(f"unknown key {key_id!r}")
        return ApiKey(*rows[0])

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key (at once: every request looks it up). Revoking twice keeps the first time."""
        self.get(key_id)
        self.rows("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", time.time(), key_id)
        return self.get(key_id)

    def revoke_corpus(self, corpus: str) -> int:
        """Revoke every live key of ``corpus`` (its deletion ends them: a corpus made later under the same
        name is someone else's); the number revoked."""
        with self._lock:
            cursor = self._db.execute("UPDATE api_keys SET revoked_at = ? WHERE corpus = ? AND revoked_at IS NULL",
                                      (time.time(), corpus))
            return int(cursor.rowcount)

    def resolve(self, secret: str) -> ApiKey | None:
        """The live key whose secret this is, or None (unknown, malformed or revoked)."""
        match = KEY_PATTERN.match(secret)
        if match is None:
            return None
        rows = self.rows("SELECT hash, id, scope, corpus, name, created_at, revoked_at FROM api_keys WHERE id = ?",
                          match.group(1))
        if not rows or not hmac.compare_digest(rows[0][0], _digest(secret)):
            return None
        key = ApiKey(*rows[0][1:])
        return key if key.revoked_at is None else None


__all__ = ["SCOPES", "ApiKey", "KeyStore", "NewKey", "Scope"]
