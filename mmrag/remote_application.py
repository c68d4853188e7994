"""The application over a running server's REST API (:mod:`mmrag.application`), through the one REST client
(:class:`mmrag.rest_client.Client`): the server owns the data and checks the key the client sends.

Lifecycle: one per command or process; ``close`` closes the client. Uploads go in groups (each request one
job). Imports only httpx and mmrag's light modules: ``mmrag search`` against a server starts in well under
a second.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mmrag.access import Principal
from mmrag.application import AnswerRequest, IngestProgress, Refused, Uploaded
from mmrag.errors import InvalidInput, MMRAGError
from mmrag.generate.answer_events import AnswerEvent, event_of
from mmrag.rest_client import Client
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult


def evidence_of(corpus: str, row: dict[str, Any]) -> Evidence:
    """A REST search result as the :class:`~mmrag.types.Evidence` it was made from (the inverse of
    :meth:`Evidence.as_json`; the URLs are the server's and are not kept)."""
    return Evidence(kind=EvidenceKind(row["kind"]), corpus=corpus, document_id=str(row["document_id"]),
                    filename=str(row["document"]), page_id=str(row["page_id"]), page=int(row["page"]),
                    score=float(row["score"]), snippet=str(row.get("snippet", "")),
                    boxes=[tuple(b) for b in row.get("boxes", [])],  # type: ignore[misc]
                    scores={k: float(v) for k, v in row.get("scores", {}).items()},
                    ranks={k: int(v) for k, v in row.get("ranks", {}).items()},
                    metadata=dict(row.get("metadata", {})), section=list(row.get("section", [])))


class RemoteApplication:
    """See the module docstring."""

    upload_files = 32  # files per upload request (each request is one job)
    upload_bytes = 256 * 1024 * 1024  # or fewer, to bound one request's size

    def __init__(self, client: Client, *, job_timeout_s: float = 3600.0) -> None:
        self.client = client
        self.job_timeout_s = job_timeout_s  # how long :meth:`prepare` waits for one upload's job
        self.description = f"api {client.base_url}"
        self.can_answer = True

    def as_principal(self, principal: Principal) -> RemoteApplication:
        raise InvalidInput("a remote application is the view of the key its client sends; "
                           "make a client with that key instead")

    def _groups(self, paths: Sequence[Path]) -> list[list[Path]]:
        groups: list[list[Path]] = [[]]
        size = 0
        for p in paths:
            n = p.stat().st_size
            if groups[-1] and (len(groups[-1]) >= self.upload_files or size + n > self.upload_bytes):
                groups.append([])
                size = 0
            groups[-1].append(p)
            size += n
        return [g for g in groups if g]

    def health(self) -> dict[str, Any]:
        return self.client.health()

    # corpora --------------------------------------------------------------------------
    def corpora(self) -> list[dict[str, Any]]:
        return self.client.corpora()

    def corpus(self, corpus: str) -> dict[str, Any]:
        return self.client.corpus(corpus)

    def create_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.client.create_corpus(corpus, config)

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        self.client.ensure_corpus(corpus, config)

    def delete_corpus(self, corpus: str) -> None:
        self.client.delete_corpus(corpus)

    # uploads and jobs -----------------------------------------------------------------
    def upload(self, corpus: str, files: Sequence[tuple[str, bytes] | Refused],
               metadata: dict[str, Any]) -> Uploaded:
        """One request (one job); files refused before they were sent are listed after the server's refusals."""
        sent = [f for f in files if not isinstance(f, Refused)]
        body = self.client.upload(corpus, sent, metadata or None) if sent else {"job": None, "errors": []}
        refused = [Refused(e["filename"], e["error"], e["message"]) for e in body.get("errors", [])]
        job = body.get("job")
        return Uploaded(job["id"] if job else None, refused + [f for f in files if isinstance(f, Refused)])

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Refused]]:
        job_ids: list[str] = []
        refused: list[Refused] = []
        for group in self._groups(paths):
            uploaded = self.upload(corpus, [(p.name, p.read_bytes()) for p in group], metadata)
            refused.extend(uploaded.refused)
            if uploaded.job_id:
                job_ids.append(uploaded.job_id)
        return job_ids, refused

    def job(self, job_id: str) -> dict[str, Any]:
        return self.client.job(job_id)

    def jobs(self, corpus: str, limit: int = 100) -> list[dict[str, Any]]:
        return list(self.client.call("GET", f"/corpora/{corpus}/jobs", params={"limit": limit}))

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        return dict(self.client.call("POST", f"/jobs/{job_id}/cancel"))

    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Upload the files not listed yet as jobs of the server's ingestion pipeline; wait for them."""
        self.ensure_corpus(corpus, config)
        present = {d["filename"] for d in self.client.documents(corpus)}
        todo = [f for f in files if f.name not in present]
        done = 0
        for group in self._groups(todo):
            job_ids, rejected = self.submit(corpus, group, {})
            if rejected:  # a file the server refused would never be listed: fail now, saying which
                raise MMRAGError(f"upload refused: {rejected}")
            for job_id in job_ids:
                job = self.client.wait_job(job_id, timeout_s=self.job_timeout_s)
                if job["errors"]:
                    raise MMRAGError(f"ingestion failed: {job['errors']}")
            done += len(group)
            progress(done, len(todo), "")
        wanted = {f.name for f in files}
        listed = [d for d in self.client.documents(corpus) if d["filename"] in wanted]
        return {"documents": len(listed), "pages": sum(d["page_count"] for d in listed), "uploaded": len(todo)}

    # documents and pages --------------------------------------------------------------
    def documents(self, corpus: str, offset: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        return self.client.documents(corpus, offset=offset, limit=limit)

    def document(self, corpus: str, document_id: str) -> dict[str, Any]:
        return dict(self.client.call("GET", f"/corpora/{corpus}/documents/{document_id}"))

    def delete_document(self, corpus: str, document_id: str) -> None:
        self.client.delete_document(corpus, document_id)

    def page(self, corpus: str, page_id: str) -> dict[str, Any]:
        return self.client.page(corpus, page_id)

    def page_image(self, corpus: str, page_id: str) -> bytes:
        return self.client.page_image(corpus, page_id)

    # search and answers ---------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        body = self.client.search(corpus, request)
        return SearchResult([evidence_of(corpus, r) for r in body["results"]],
                            {k: float(v) for k, v in body["timings"].items()})

    def check_image_query(self, corpus: str, spaces: list[str] | None) -> None:
        return None  # the server checks when the search arrives, before it decodes the image

    def answer(self, corpus: str, request: AnswerRequest) -> Iterator[AnswerEvent]:
        if request.conversation is not None or request.temperature:
            raise InvalidInput("a conversation or a temperature is not part of the REST answer; "
                               "use the server's /v1/chat/completions")
        body = {"question": request.question, "top_k": request.top_k,
                "visual_token_budget": request.visual_token_budget, "max_new_tokens": request.max_new_tokens,
                "document_ids": request.document_ids}
        events = (event_of(name, data) for name, data in
                  self.client.answer_events(corpus, {k: v for k, v in body.items() if v is not None}))
        first = next(events, None)  # the request is sent here: an error response raises before the first event
        return itertools.chain([] if first is None else [first], events)

    def close(self) -> None:
        self.client.close()
