"""A full disk under the data folder, told apart from other failures wherever a write meets it.

Every layer that writes (the spool's files, the catalog's and the job state's SQLite, the page store,
the embedded Qdrant engine) reports a full disk its own way: ``OSError`` with ``ENOSPC``/``EDQUOT``,
SQLite's "database or disk is full", a Rust error carrying "No space left on device (os error 28)".
:func:`disk_full` recognises each (along the exception's cause chain) and :func:`no_space` is the one
error they become (:class:`mmrag.errors.NoSpace`, 507 over REST), saying what was being written and
what to do. Writes are atomic or transactional at every layer, so what a full disk stops leaves
nothing half-written behind; the next write after space returns succeeds.
"""

from __future__ import annotations

import errno
import sqlite3

from mmrag.errors import NoSpace

_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_TEXTS = ("no space left on device", "os error 28", "database or disk is full", "disk quota exceeded")


def disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a write refused for want of disk space."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, NoSpace):
            return True
        if isinstance(exc, OSError) and exc.errno in _ERRNOS:
            return True
        if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        text = str(exc).lower()  # the store engine's (Rust) errors carry the OS error's text
        if any(t in text for t in _TEXTS):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def no_space(doing: str) -> NoSpace:
    """The error of a write that found the data folder's disk full while ``doing``."""
    return NoSpace(f"no space left on the data folder's disk (while {doing}); nothing stored before was lost: free "
                   "space there (or move MMRAG_DATA_DIR to a larger disk) and send it again",
                   detail={"reason": "disk_full"})
