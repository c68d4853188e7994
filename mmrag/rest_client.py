"""The REST client of the mmrag API: the one used by the CLI (against ``mmrag serve``) and by the
evaluation REST target.

Error bodies ``{"error": code, "message": ...}`` become the mmrag error they stand for
(:func:`mmrag.errors.error_for_code`), so callers handle one set of exceptions whether they run
in-process or over HTTP. The API key (``api_key``, else ``MMRAG_API_KEY``) is sent as
``Authorization: Bearer KEY``. Imports only httpx and mmrag's light modules: no model code.

Lifecycle: one :class:`Client` per caller and server; ``close()`` (or ``with Client(...)``).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import httpx

from mmrag.errors import InvalidInput, Unavailable, error_for_code
from mmrag.types import SearchRequest

Json = dict[str, Any]


def raise_for(response: httpx.Response) -> None:
    """Raise the mmrag error of an error response (4xx without a known code: InvalidInput; 5xx: Unavailable)."""
    if response.status_code < 400:
        return
    try:
        body = response.json()
        code, message = str(body.get("error", "")), str(body.get("message") or "")
    except (ValueError, AttributeError):
        code, message = "", response.text[:300]
    try:
        retry_after: float | None = float(response.headers["Retry-After"])
    except (KeyError, ValueError):
        retry_after = None
    fallback = InvalidInput if response.status_code < 500 else Unavailable
    raise error_for_code(code, message or f"HTTP {response.status_code}", fallback=fallback,
                         retry_after=retry_after)


def search_body(req: SearchRequest) -> Json:
    """The JSON body of ``POST /corpora/{corpus}/search`` for a request."""
    body: Json = {"query": req.query, "top_k": req.top_k, "spaces": req.spaces, "weights": req.weights,
                  "document_ids": req.document_ids, "metadata": req.metadata, "kinds": req.kinds,
                  "prefetch_limit": req.prefetch_limit, "rrf_k": req.rrf_k, "fusion": req.fusion,
                  "explain": req.explain, "image_page_id": req.image_page_id}
    if req.pages:
        body["pages"] = {"first": req.pages[0], "last": req.pages[1]}
    if req.image is not None:
        body["image_base64"] = base64.b64encode(req.image).decode()
    return body


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(event, decoded data) pairs of a server-sent-events stream."""
    event = "message"
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            yield event, json.loads(line[5:].strip())
        elif not line:
            event = "message"


class Client:
    def __init__(self, base_url: str, api_key: str | None = None, *, timeout_s: float = 600.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        key = api_key if api_key is not None else os.environ.get("MMRAG_API_KEY") or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, headers=headers, transport=transport,
                                 timeout=httpx.Timeout(timeout_s, connect=5.0))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; the decoded JSON body (None when empty), or the mmrag error it reports."""
        response = self.http.request(method, path, **kwargs)
        raise_for(response)
        return response.json() if response.content else None

    # service -----------------------------------------------------------------------
    def health(self) -> Json:
        return dict(self.call("GET", "/health"))

    # corpora -----------------------------------------------------------------------
    def corpora(self) -> list[Json]:
        return list(self.call("GET", "/corpora"))

    def corpus(self, name: str) -> Json:
        return dict(self.call("GET", f"/corpora/{name}"))

    def create_corpus(self, name: str, config: Json | None = None) -> Json:
        return dict(self.call("POST", "/corpora", json={"name": name, **({"config": config} if config else {})}))

    def ensure_corpus(self, name: str, config: Json | None = None) -> bool:
        """Create the corpus unless it exists; True when it was created."""
        response = self.http.post("/corpora", json={"name": name, **({"config": config} if config else {})})
        if response.status_code == 409:
            return False
        raise_for(response)
        return True

    def delete_corpus(self, name: str) -> None:
        self.call("DELETE", f"/corpora/{name}")

    # documents and jobs --------------------------------------------------------------
    def documents(self, corpus: str, *, offset: int = 0, limit: int = 10_000) -> list[Json]:
        return list(self.call("GET", f"/corpora/{corpus}/documents", params={"offset": offset, "limit": limit}))

    def upload(self, corpus: str, files: Sequence[tuple[str, bytes]], metadata: Json | None = None,
               *, wait: bool = False) -> Json:
        """Start a job over the files: the upload body (``job``, ``errors`` for files refused up front,
        ``documents`` with ``wait``). A refusal of every file still returns the body, with ``job`` null."""
        response = self.http.post(f"/corpora/{corpus}/documents", files=[("files", f) for f in files],
                                  data={"metadata": json.dumps(metadata)} if metadata else None,
                                  params={"wait": "true"} if wait else None)
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and ("job" in body or body.get("errors")):
            return body
        raise_for(response)
        raise Unavailable(f"upload answered HTTP {response.status_code} without a job: {response.text[:200]}")

    def delete_document(self, corpus: str, document_id: str) -> None:
        self.call("DELETE", f"/corpora/{corpus}/documents/{document_id}")

    def job(self, job_id: str) -> Json:
        return dict(self.call("GET", f"/jobs/{job_id}"))

    def wait_job(self, job_id: str, *, every: float = 0.2, timeout_s: float = 3600.0) -> Json:
        """Poll the job until it has finished (done, failed or cancelled): the loop of
        :func:`mmrag.jobs.wait.wait_job`, over REST (the job store is the server's)."""
        from mmrag.jobs.wait import JobWatch  # the evaluation's REST target waits; `mmrag search` does not

        watch: JobWatch[Json] = JobWatch(job_id, lambda job: str(job["state"]), timeout_s=timeout_s)
        while not watch.finished(job := self.job(job_id)):
            time.sleep(every)
        return job

    def page(self, corpus: str, page_id: str) -> Json:
        """A page with its text and word boxes (``GET /corpora/{corpus}/pages/{page_id}``)."""
        return dict(self.call("GET", f"/corpora/{corpus}/pages/{page_id}"))

    def page_image(self, corpus: str, page_id: str) -> bytes:
        """The page's image (PNG)."""
        response = self.http.get(f"/corpora/{corpus}/pages/{page_id}/image")
        raise_for(response)
        return response.content

    # search and answers --------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> Json:
        """``{"results": [...], "timings": {...}}`` of a search."""
        return dict(self.call("POST", f"/corpora/{corpus}/search", json=search_body(request)))

    def answer_events(self, corpus: str, body: Json) -> Iterator[tuple[str, Any]]:
        """(event, data) pairs of the answer's SSE stream: evidence, token..., done (or error)."""
        with self.http.stream("POST", f"/corpora/{corpus}/answer", json={**body, "stream": True}) as response:
            if response.status_code >= 400:
                response.read()
                raise_for(response)
            yield from sse_events(response.iter_lines())

    # evaluations ---------------------------------------------------------------------
    def start_evaluation(self, suite: str, variant: str | None = None) -> Json:
        return dict(self.call("POST", "/evaluations", json={"suite": suite, "variant": variant}))

    def evaluation(self, evaluation_id: str) -> Json:
        return dict(self.call("GET", f"/evaluations/{evaluation_id}"))

