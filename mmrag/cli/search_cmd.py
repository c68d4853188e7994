"""``mmrag search``."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from mmrag.cli.commands import fail
from mmrag.cli.remote import open_backend
from mmrag.errors import MMRAGError


def search(
    query: Annotated[str, typer.Argument(help="Text query")],
    corpus: Annotated[str, typer.Option("--corpus", "-c")],
    top_k: Annotated[int, typer.Option("--top-k", "-k")] = 10,
    space: Annotated[list[str] | None, typer.Option("--space", help="Restrict to spaces (repeat)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list")] = False,
) -> None:
    """Search a corpus; prints a table, or JSON with --json."""
    try:
        with open_backend() as backend:
            results = backend.search(corpus, query, top_k, space or None)
    except MMRAGError as exc:
        fail(exc)
        return
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    table = Table("#", "score", "document", "page", "snippet")
    for i, r in enumerate(results, 1):
        table.add_row(str(i), f"{r['score']:.4f}", r["document"], str(r["page"]), r["snippet"][:90])
    Console().print(table)
