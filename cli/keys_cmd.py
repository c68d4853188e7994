"""``mmrag keys``: create, list and revoke API keys.

Over REST (admin key in ``--api-key`` / ``MMRAG_API_KEY``) when ``mmrag serve`` owns the data
folder, else in-process on the data folder's key store. Whoever can open the data folder is its
operator: without a usable key for a running server, the command works on the folder directly
(that is how the first admin key is made).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cli.remote import running_server
from mmrag import errors
from mmrag.config import load_settings
from mmrag.keys import KeyStore, Scope
from mmrag.rest_client import Client

keys_app = typer.Typer(help="API keys: admin (everything), write or read on one corpus.", no_args_is_help=True)
console = Console(stderr=True)


def _call(method: str, path: str, local: Any, **kwargs: Any) -> Any:
    """The REST call when a server runs and accepts it, else ``local(store)`` on the data folder."""
    settings = load_settings()
    url = running_server(settings.data_dir)
    if url is not None:
        try:
            with Client(url) as client:
                return client.call(method, path, **kwargs)
        except (errors.Unauthorized, errors.Forbidden) as exc:
            console.print(f"[yellow]{url} refused ({exc.code}); using the data folder {settings.data_dir}[/yellow]")
    store = KeyStore(settings.data_dir)
    try:
        return local(store)
    finally:
        store.close()


def _fail(exc: errors.MMRAGError) -> None:
    console.print(f"[red]error[/red] ({exc.code}): {exc.message}")
    raise typer.Exit(2)


@keys_app.command("create")
def create(
    admin: Annotated[bool, typer.Option("--admin", help="A key for everything (keys and corpora included)")] = False,
    corpus: Annotated[str | None, typer.Option("--corpus", "-c", help="The corpus of a write or read key")] = None,
    scope: Annotated[str, typer.Option(help="write (upload, delete, jobs) or read (search, answer, list)")] = "read",
    name: Annotated[str, typer.Option(help="Who holds the key (free text)")] = "",
) -> None:
    """Create a key and print it. The last line of output is the key alone: it is shown only now."""
    chosen: Scope = "admin" if admin else scope  # type: ignore[assignment]
    if chosen not in ("admin", "write", "read"):
        _fail(errors.InvalidInput(f"unknown scope {scope!r}; allowed: write, read (or --admin)"))
    if admin and corpus:
        _fail(errors.InvalidInput("--admin covers every corpus; leave out --corpus"))
    target = None if admin else corpus

    def local(store: KeyStore) -> dict[str, Any]:
        new = store.create(chosen, target, name)
        return {**asdict(new.key), "prefix": new.key.prefix, "key": new.secret}

    try:
        out = _call("POST", "/keys", local, json={"scope": chosen, "corpus": target, "name": name})
    except errors.MMRAGError as exc:
        _fail(exc)
        return
    console.print(f"created {out['scope']} key {out['id']}" + (f" for corpus {out['corpus']}" if out["corpus"] else "")
                  + "; store it now, it is not shown again:")
    print(out["key"])


@keys_app.command("list")
def list_keys() -> None:
    """Every key: id, prefix, scope, corpus, name, created, revoked (never the secrets)."""
    try:
        rows = _call("GET", "/keys", lambda s: [{**asdict(k), "prefix": k.prefix} for k in s.list()])
    except errors.MMRAGError as exc:
        _fail(exc)
        return
    table = Table("id", "prefix", "scope", "corpus", "name", "created", "revoked")
    for k in rows:
        table.add_row(k["id"], k["prefix"], k["scope"], k["corpus"] or "*", k["name"], _when(k["created_at"]),
                      _when(k["revoked_at"]) if k["revoked_at"] else "")
    Console().print(table)


@keys_app.command("revoke")
def revoke(key_id: Annotated[str, typer.Argument(help="The key's id (see `mmrag keys list`)")]) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    try:
        out = _call("DELETE", f"/keys/{key_id}", lambda s: asdict(s.revoke(key_id)))
    except errors.MMRAGError as exc:
        _fail(exc)
        return
    console.print(f"revoked key {out['id']} ({out['scope']}{', ' + out['corpus'] if out['corpus'] else ''})")


def _when(t: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
