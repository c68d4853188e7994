"""The error hierarchy of mmrag.

Core code raises these; only the shells (``api/``, the CLI) decide how they are
shown (HTTP status codes live in ``api/errors.py``). Every message says what was
wrong and, where it helps, what is allowed.
"""

from __future__ import annotations


class MMRAGError(Exception):
    """Base class. ``code`` is a stable machine-readable slug."""

    code = "error"

    def __init__(self, message: str, *, detail: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or {}


class InvalidInput(MMRAGError):
    """The caller sent something we cannot use (bad query, bad option, bad file)."""

    code = "invalid_input"


class UnsupportedMediaType(InvalidInput):
    """A file whose type we do not ingest, or whose bytes do not match its type."""

    code = "unsupported_media_type"


class CorruptDocument(InvalidInput):
    """A file of a supported type that cannot be decoded (corrupt, truncated, encrypted)."""

    code = "corrupt_document"


class TooLarge(InvalidInput):
    """A file, page count, pixel count or text beyond a configured limit."""

    code = "too_large"


class TooComplex(InvalidInput):
    """A file whose parsing or drawing went past a budget (time, memory, content drawn per page); the
    message names what was too much and the setting that limits it."""

    code = "too_complex"


class NotFound(MMRAGError):
    """An unknown corpus, document, page, job or model id."""

    code = "not_found"


class Unauthorized(MMRAGError):
    """No API key, or one that is unknown or revoked."""

    code = "unauthorized"


class Forbidden(MMRAGError):
    """A valid API key whose scope does not allow this action."""

    code = "forbidden"


class Conflict(MMRAGError):
    """The request contradicts existing state (e.g. the corpus already exists)."""

    code = "conflict"


class Overloaded(MMRAGError):
    """A bounded queue is full; the caller should retry after ``retry_after`` seconds."""

    code = "overloaded"

    def __init__(self, message: str, *, retry_after: float = 1.0, detail: dict[str, object] | None = None):
        super().__init__(message, detail=detail)
        self.retry_after = retry_after


class Unavailable(MMRAGError):
    """A component (model, embedding service, VLM) is not configured or not reachable."""

    code = "unavailable"


class NoSpace(MMRAGError):
    """The data folder's disk is full: what was being written was not kept (nothing already stored is lost);
    it works again once space is freed."""

    code = "no_space"


def _classes(base: type[MMRAGError]) -> list[type[MMRAGError]]:
    out = [base]
    for sub in base.__subclasses__():
        out.extend(_classes(sub))
    return out


def error_for_code(code: str, message: str, *, fallback: type[MMRAGError] = MMRAGError,
                   retry_after: float | None = None, detail: dict[str, object] | None = None) -> MMRAGError:
    """The error that a wire error body ``{"error": code, "message": ...}`` stands for: the one
    code <-> class map shared by the API, the CLI, the REST client and the embedding client.
    Unknown codes give ``fallback``; ``retry_after`` goes to :class:`Overloaded`."""
    cls = next((c for c in _classes(MMRAGError) if c.code == code), fallback)
    if issubclass(cls, Overloaded):
        return cls(message, retry_after=retry_after or 1.0, detail=detail)
    return cls(message, detail=detail)
