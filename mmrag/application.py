"""The application interface: the product's use cases, the one thing every door calls.

The REST routes, ``/v1/chat/completions``, MCP (stdio and HTTP), the CLI, evaluations and ranker training
are handed an :class:`Application` and never the pipeline's parts (as vLLM's entrypoints are handed an
``EngineClient``, and qdrant-client has one interface over a local and a remote store). It is implemented
twice: :class:`mmrag.local_application.LocalApplication` in this process, over the parts the composition
root built, and :class:`mmrag.remote_application.RemoteApplication` over a running server's REST API. Both
take and return the same types (:class:`~mmrag.types.SearchRequest`, :class:`~mmrag.types.SearchResult`,
:class:`AnswerRequest`, typed answer events, the REST shapes for listings), so a door, a report or an
evaluation's metrics never depend on where the work ran.

An application is one principal's view (:class:`mmrag.access.Principal`): another tenant's corpus is
unknown (404), a key without the scope is refused (403). ``as_principal`` gives the view of another key
(the API: one per request). This module imports no model code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mmrag.access import Principal
from mmrag.generate.answer_events import AnswerEvent
from mmrag.generate.conversation import Conversation
from mmrag.types import SearchRequest, SearchResult

IngestProgress = Callable[[int, int, str], None]
"""Called as ``(done, total, filename)`` as files are ingested."""


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """A question to answer from one corpus (the bounds are the REST ``AnswerIn``'s, declared once there)."""

    question: str
    top_k: int = 5  # pages retrieved as candidate evidence
    visual_token_budget: int | None = None  # None: the VLM's configured budget
    max_new_tokens: int | None = None  # None: the VLM's configured cap
    document_ids: list[str] | None = None  # retrieve only from these documents
    temperature: float = 0.0
    conversation: Conversation | None = None  # earlier turns, instructions, a query image (the chat door)


@dataclass(frozen=True, slots=True)
class Refused:
    """A file refused before its job started: the error's code (:mod:`mmrag.errors`) and what was wrong."""

    filename: str
    code: str  # e.g. too_large, unsupported_media_type, no_space
    message: str


@dataclass(frozen=True, slots=True)
class Uploaded:
    """What became of an upload: the one job of the accepted files (None when every file was refused) and the
    files refused up front, in the files' order."""

    job_id: str | None
    refused: list[Refused]


def page_links(public_url: str, corpus: str, page_id: str) -> tuple[str, str]:
    """(image URL, thumbnail URL) of a page under MMRAG_API__PUBLIC_URL (relative when it is empty)."""
    image = f"{public_url.rstrip('/')}/corpora/{corpus}/pages/{page_id}/image"
    return image, f"{image}?width=256"


class Application(Protocol):
    """The use cases. Errors are :mod:`mmrag.errors` classes (mapped to HTTP only in ``api/``)."""

    description: str  # "in-process" or "api <url>" (reports name it)
    can_answer: bool  # whether answers are served (an evaluation skips its answer metrics otherwise)

    def as_principal(self, principal: Principal) -> Application:
        """The same application as ``principal`` sees it."""
        ...

    def health(self) -> dict[str, Any]:
        """Which spaces can serve and why any is off, the store, the text model's kernels (``GET /health``)."""
        ...

    # corpora --------------------------------------------------------------------------
    def corpora(self) -> list[dict[str, Any]]:
        """The corpora this principal sees: ``{"name", "config", "documents", "pages", "created_at"}``."""
        ...

    def corpus(self, corpus: str) -> dict[str, Any]:
        """One corpus, in the shape of :meth:`corpora`'s rows."""
        ...

    def create_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create a corpus (Conflict when it exists); spaces whose models cannot load here are dropped."""
        ...

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        """Create the corpus (with ``config``) unless it exists."""
        ...

    def delete_corpus(self, corpus: str) -> None:
        """Delete a corpus with its documents, pages and vectors."""
        ...

    # uploads and jobs -----------------------------------------------------------------
    def upload(self, corpus: str, files: Sequence[tuple[str, bytes] | Refused],
               metadata: dict[str, Any]) -> Uploaded:
        """Check each ``(filename, bytes)`` (empty, too large, not a supported type, container limits) and start one
        job over the accepted ones with ``metadata``. A file the door could not read comes as its :class:`Refused`
        and keeps its place among the refusals."""
        ...

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Refused]]:
        """Upload files from disk (in groups over REST): (job ids, files refused up front)."""
        ...

    def job(self, job_id: str) -> dict[str, Any]:
        """A job's progress: the REST job's shape (see :meth:`mmrag.jobs.model.JobStatus.summary`)."""
        ...

    def jobs(self, corpus: str, limit: int = 100) -> list[dict[str, Any]]:
        """A corpus's jobs, newest first (each as :meth:`job`)."""
        ...

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        """Stop a job: files indexed stay, unfinished ones leave nothing behind; the job as :meth:`job`."""
        ...

    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create the corpus (with ``config`` if new), ingest the files not indexed yet and wait:
        ``{"documents", "pages"}``."""
        ...

    # documents and pages --------------------------------------------------------------
    def documents(self, corpus: str, offset: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Documents of a corpus, oldest first: the REST ``DocumentOut`` shape."""
        ...

    def document(self, corpus: str, document_id: str) -> dict[str, Any]:
        """A document with its pages (``pages``: number, size, text source, image URLs): ``DocumentDetail``."""
        ...

    def delete_document(self, corpus: str, document_id: str) -> None:
        """Delete a document: its vectors, pages and images."""
        ...

    def page(self, corpus: str, page_id: str) -> dict[str, Any]:
        """A page with its text and word boxes: the REST ``PageDetailOut`` shape."""
        ...

    def page_image(self, corpus: str, page_id: str) -> bytes:
        """The page's image (PNG)."""
        ...

    # search and answers ---------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        """Ranked evidence and per-stage timings."""
        ...

    def check_image_query(self, corpus: str, spaces: list[str] | None) -> None:
        """Refuse an image query before its image is read or decoded unless a space of the request (default:
        the corpus's) takes images (a door calls it before it reads an upload; :meth:`search` checks too)."""
        ...

    def answer(self, corpus: str, request: AnswerRequest) -> Iterator[AnswerEvent]:
        """The answer as a stream of typed events: evidence, token..., done (or error). Errors found before
        the first event (an unknown corpus, a bad request, an engine over its budget) raise here."""
        ...

    def close(self) -> None: ...
