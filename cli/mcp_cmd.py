"""``mmrag mcp``: mmrag as an MCP server over stdio, for desktop agents (the tools of :mod:`api.mcp_server`).

Where it reads: ``--url`` names a running server (REST, the key sent as the bearer); otherwise the chooser
of every command (:func:`cli.remote.open_application`): the ``mmrag serve`` that owns the data folder over REST,
or the data folder in-process, where a key (``--key`` / ``MMRAG_API_KEY``) is checked against the folder's
key store on every call as the API would check it (its corpus only), and no key reads every corpus (the
folder's owner runs this process). Nothing but MCP's JSON-RPC is written to stdout.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from cli.remote import open_application
from mmrag.application import Application
from mmrag.local_application import LocalApplication
from mmrag.remote_application import RemoteApplication
from mmrag.rest_client import Client

if TYPE_CHECKING:  # the API's modules load when the command runs, not with every command of the CLI
    from api.mcp_server import ApplicationOf


def application_of(application: Application, key: str | None) -> ApplicationOf:
    """``ctx -> Application``: over REST the server checks the key; in-process the key's principal is
    resolved on each call (a revoked key stops working), and no key reads every corpus."""
    if not key or not isinstance(application, LocalApplication):
        return lambda ctx: application
    from api.auth import AuthGate
    from mmrag.config import load_settings

    gate = AuthGate(load_settings())  # the settings the in-process application was built from
    return lambda ctx: application.as_principal(gate.key_principal(key))


@contextmanager
def mcp_application(url: str | None, key: str | None) -> Iterator[Application]:
    if url:
        remote = RemoteApplication(Client(url, api_key=key, timeout_s=900))
        try:
            yield remote
        finally:
            remote.close()
        return
    with open_application(timeout_s=900) as chosen:
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
        os.environ["MMRAG_API_KEY"] = key  # the REST client of open_application sends it
    with mcp_application(url, key) as application:
        build_mcp(application_of(application, key)).run("stdio")
