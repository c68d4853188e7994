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


class Backend(Protocol):
    def ensure_corpus(self, corpus: str) -> None: ...
    def ingest(self, corpus: str, path: Path, metadata: dict[str, Any]) -> tuple[str, int]: ...
    def search(self, corpus: str, query: str, top_k: int, spaces: list[str] | None) -> list[dict[str, Any]]: ...
    def corpora(self) -> list[dict[str, Any]]: ...


class LocalBackend:
    def __init__(self) -> None:
        from mmrag.pipeline import build_pipeline

        self.pipeline = build_pipeline(load_settings())

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
    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=httpx.Timeout(600.0, connect=5.0))

    def ensure_corpus(self, corpus: str) -> None:
        r = self.client.post("/corpora", json={"name": corpus})
        if r.status_code != 409:
            raise_for(r)

    def ingest(self, corpus: str, path: Path, metadata: dict[str, Any]) -> tuple[str, int]:
        with path.open("rb") as fh:
            r = self.client.post(f"/corpora/{corpus}/documents", files=[("files", (path.name, fh))],
                                 data={"metadata": json.dumps(metadata)} if metadata else None)
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
