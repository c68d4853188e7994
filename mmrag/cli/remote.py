"""Where CLI commands run: over REST against the running server that owns the data folder,
or in-process when none does."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx

from mmrag import errors
from mmrag.config import load_settings
from mmrag.types import SearchRequest

_BY_CODE: dict[str, type[errors.MMRAGError]] = {
    cls.code: cls for cls in (errors.InvalidInput, errors.UnsupportedMediaType, errors.CorruptDocument,
                              errors.TooLarge, errors.NotFound, errors.Conflict, errors.Overloaded,
                              errors.Unavailable)
}


Rejected = tuple[str, str, str]  # (filename, error code, message): refused before a job started


class Backend(Protocol):
    def ensure_corpus(self, corpus: str) -> None: ...
    def ingest(self, corpus: str, path: Path, metadata: dict[str, Any]) -> tuple[str, int]: ...
    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        """Start ingestion jobs for the files; (job ids, files rejected up front)."""
        ...
    def job(self, job_id: str) -> dict[str, Any]:
        """A job's progress as plain data (see :meth:`mmrag.jobs.model.JobStatus.summary`)."""
        ...
    def search(self, corpus: str, query: str, top_k: int, spaces: list[str] | None) -> list[dict[str, Any]]: ...
    def corpora(self) -> list[dict[str, Any]]: ...


class LocalBackend:
    """In-process: this CLI process owns the data folder and runs the embedded job runner while it lives
    (an interrupted job resumes at the next `mmrag ingest` or `mmrag serve`)."""

    def __init__(self) -> None:
        from mmrag.pipeline import build_pipeline

        self.pipeline = build_pipeline(load_settings())
        self.runner: Any = None

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        from mmrag.jobs.runner import local_runner
        from mmrag.jobs.writer import Upload, check_upload

        uploads, rejected = [], []
        for p in paths:
            data = p.read_bytes()
            try:
                check_upload(data, p.name, self.pipeline.settings.ingest.max_upload_bytes)
                uploads.append(Upload(p.name, data, metadata))
            except errors.MMRAGError as exc:
                rejected.append((p.name, exc.code, exc.message))
        if self.runner is None:
            self.runner = local_runner(self.pipeline)
            self.runner.start()
        return ([self.runner.submit(corpus, uploads)] if uploads else []), rejected

    def job(self, job_id: str) -> dict[str, Any]:
        assert self.pipeline.jobs is not None
        return self.pipeline.jobs.status(job_id).summary()

    def ensure_corpus(self, corpus: str) -> None:
        self.pipeline.ensure_corpus(corpus)

    def ingest(self, corpus: str, path: Path, metadata: dict[str, Any]) -> tuple[str, int]:
        outcome = self.pipeline.ingest_bytes(corpus, path.read_bytes(), path.name, metadata)
        return ("created" if outcome.created else "exists"), outcome.document.page_count

    def search(self, corpus: str, query: str, top_k: int, spaces: list[str] | None) -> list[dict[str, Any]]:
        result = self.pipeline.search(corpus, SearchRequest(query=query, top_k=top_k, spaces=spaces))
        return [{"document": e.filename, "document_id": e.document_id, "page": e.page, "page_id": e.page_id,
                 "score": e.score, "snippet": e.snippet, "kind": e.kind.value} for e in result.evidence]

    def corpora(self) -> list[dict[str, Any]]:
        return [{"name": n, "config": c.model_dump(), "documents": d, "pages": p}
                for n, c, _, d, p in self.pipeline.catalog.list_corpora()]

    def close(self) -> None:
        if self.runner is not None:
            self.runner.stop()
        self.pipeline.close()


def raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = {"error": "error", "message": response.text[:300]}
    cls = _BY_CODE.get(body.get("error", ""), errors.InvalidInput if response.status_code < 500 else errors.Unavailable)
    raise cls(body.get("message") or f"HTTP {response.status_code}")


class RemoteBackend:
    upload_files = 32  # files per upload request (each request is one job)
    upload_bytes = 256 * 1024 * 1024  # or fewer, to bound one request's size

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=httpx.Timeout(600.0, connect=5.0))

    def _groups(self, paths: list[Path]) -> list[list[Path]]:
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

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Rejected]]:
        job_ids: list[str] = []
        rejected: list[Rejected] = []
        for group in self._groups(paths):
            files = [("files", (p.name, p.read_bytes())) for p in group]
            r = self.client.post(f"/corpora/{corpus}/documents", files=files,
                                 data={"metadata": json.dumps(metadata)} if metadata else None)
            body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            rejected.extend((e["filename"], e["error"], e["message"]) for e in body.get("errors", []))
            if body.get("job"):
                job_ids.append(body["job"]["id"])
            elif not body.get("errors"):
                raise_for(r)
        return job_ids, rejected

    def job(self, job_id: str) -> dict[str, Any]:
        r = self.client.get(f"/jobs/{job_id}")
        raise_for(r)
        return dict(r.json())

    def ensure_corpus(self, corpus: str) -> None:
        r = self.client.post("/corpora", json={"name": corpus})
        if r.status_code != 409:
            raise_for(r)

    def ingest(self, corpus: str, path: Path, metadata: dict[str, Any]) -> tuple[str, int]:
        with path.open("rb") as fh:
            r = self.client.post(f"/corpora/{corpus}/documents", files=[("files", (path.name, fh))],
                                 data={"metadata": json.dumps(metadata)} if metadata else None,
                                 params={"wait": "true"})
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        if body.get("errors") and not body.get("documents"):
            err = body["errors"][0]
            raise _BY_CODE.get(err["error"], errors.InvalidInput)(err["message"])
        raise_for(r)
        doc = body["documents"][0]
        return doc["status"], doc["page_count"]

    def search(self, corpus: str, query: str, top_k: int, spaces: list[str] | None) -> list[dict[str, Any]]:
        r = self.client.post(f"/corpora/{corpus}/search", json={"query": query, "top_k": top_k, "spaces": spaces})
        raise_for(r)
        return list(r.json()["results"])

    def corpora(self) -> list[dict[str, Any]]:
        r = self.client.get("/corpora")
        raise_for(r)
        return list(r.json())

    def close(self) -> None:
        self.client.close()


def running_server(data_dir: Path) -> str | None:
    """URL of the live ``mmrag serve`` that owns ``data_dir``, if any."""
    marker = data_dir / "server.json"
    try:
        info = json.loads(marker.read_text())
        os.kill(int(info["pid"]), 0)
        httpx.get(f"{info['url']}/health", timeout=2.0).raise_for_status()
        return str(info["url"])
    except (OSError, ValueError, KeyError, httpx.HTTPError):
        return None


@contextmanager
def open_backend():  # type: ignore[no-untyped-def]
    settings = load_settings()
    url = running_server(settings.data_dir)
    backend: LocalBackend | RemoteBackend = RemoteBackend(url) if url else LocalBackend()
    try:
        yield backend
    finally:
        backend.close()
