"""``mmrag mcp``: mmrag as an MCP server over stdio, for desktop agents (the tools of :mod:`api.mcp_server`).

Where it reads: ``--url`` names a running server (REST, the key sent as the bearer); otherwise the chooser
of every command (:func:`cli.remote.open_backend`): the ``mmrag serve`` that owns the data folder over REST,
or the data folder in-process, where a key (``--key`` / ``MMRAG_API_KEY``) is checked against the folder's
key store on every call as the API would check it (its corpus only), and no key reads every corpus (the
folder's owner runs this process). Nothing but MCP's JSON-RPC is written to stdout.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.remote import open_backend
from mmrag.backends import Backend, LocalBackend, RemoteBackend
from mmrag.rest_client import Client

if TYPE_CHECKING:  # the API's modules load when the command runs, not with every command of the CLI
    from api.mcp_server import LibraryOf
    from api.schemas import AnswerIn, SearchIn


class RestLibrary:
    """The tools' library over a running server's REST API (the server checks the key)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def corpora(self) -> list[dict[str, Any]]:
        return [{"name": c["name"], "documents": c["documents"], "pages": c["pages"],
                 "spaces": c["config"]["spaces"]} for c in self.client.corpora()]

    def search(self, corpus: str, body: SearchIn) -> list[dict[str, Any]]:
        found = self.client.call("POST", f"/corpora/{corpus}/search", json=body.model_dump(exclude_none=True))
        return list(found["results"])

    def page(self, corpus: str, page_id: str) -> dict[str, Any]:
        return self.client.page(corpus, page_id)

    def page_image(self, corpus: str, page_id: str) -> bytes:
        return self.client.page_image(corpus, page_id)

    def answer(self, corpus: str, body: AnswerIn) -> dict[str, Any]:
        from mmrag.generate.answer_service import final_answer

        return final_answer(self.client.answer_events(corpus, body.model_dump(exclude_none=True)))


def library_of(backend: Backend, key: str | None) -> LibraryOf:
    """``ctx -> Library`` of a backend: in-process, the key's principal is resolved on each call."""
    from api.mcp_server import PipelineLibrary

    if isinstance(backend, RemoteBackend):
        rest = RestLibrary(backend.client)
        return lambda ctx: rest
    assert isinstance(backend, LocalBackend)
    pipeline = backend.pipeline
    if not key:
        from api.auth import Principal

        everything = PipelineLibrary(pipeline, Principal(None))
        return lambda ctx: everything
    from api.auth import AuthGate

    gate = AuthGate(pipeline.settings)
    return lambda ctx: PipelineLibrary(pipeline, gate.key_principal(key))


@contextmanager
def mcp_backend(url: str | None, key: str | None) -> Iterator[Backend]:
    if url:
        backend: Backend = RemoteBackend(Client(url, api_key=key, timeout_s=900))
        try:
            yield backend
        finally:
            backend.close()
        return
    with open_backend(timeout_s=900) as chosen:
        yield chosen


def mcp(
    url: Annotated[str | None, typer.Option("--url", help="A running mmrag server (e.g. http://127.0.0.1:8000); "
                                                          "default: the server of the data folder, or in-process")
                   ] = None,
    key: Annotated[str | None, typer.Option("--key", envvar="MMRAG_API_KEY", show_envvar=True,
                                            help="API key: the corpora it may read are the ones served")] = None,
) -> None:
    """Serve mmrag to an MCP client over stdio: tools list_corpora, search, get_page, answer; pages as
    resources (mmrag://corpora/{corpus}/pages/{page_id})."""
    from api.mcp_server import build_mcp

    if key:
        os.environ["MMRAG_API_KEY"] = key  # the REST client of open_backend sends it
    with mcp_backend(url, key) as backend:
        build_mcp(library_of(backend, key)).run("stdio")
