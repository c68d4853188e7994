"""``mmrag search``: text and/or image queries with every search option, over REST or in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cli.commands import fail
from cli.remote import open_application
from mmrag.errors import InvalidInput, MMRAGError
from mmrag.types import FUSIONS, MAX_RRF_K, MAX_WEIGHT, SearchRequest


def parse_pairs(items: list[str], what: str) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"{what} must look like NAME=VALUE, got {item!r}")
        out[key] = value
    return out


def parse_pages(text: str | None) -> tuple[int, int] | None:
    """``"3"`` -> (3, 3); ``"2-5"`` -> (2, 5)."""
    if not text:
        return None
    first, _, last = text.partition("-")
    try:
        return int(first), int(last or first)
    except ValueError:
        raise InvalidInput(f"--pages must look like 3 or 2-5, got {text!r}") from None


def parse_weights(items: list[str]) -> dict[str, float] | None:
    try:
        return {k: float(v) for k, v in parse_pairs(items, "--weight").items()} or None
    except ValueError:
        raise InvalidInput(f"--weight values must be numbers, got {items}") from None


def search(
    corpus: Annotated[str, typer.Option("--corpus", "-c")],
    query: Annotated[str, typer.Argument(help="Text query (may be empty with --image or --like-page)")] = "",
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Results, 1..max_top_k")] = 10,
    space: Annotated[list[str] | None, typer.Option("--space", help="Restrict to spaces (repeat)")] = None,
    weight: Annotated[list[str] | None,
                      typer.Option("--weight", help=f"RRF weight SPACE=W, 0..{MAX_WEIGHT} (repeat)")] = None,
    image: Annotated[Path | None, typer.Option("--image", help="Image query file: pages like this")] = None,
    like_page: Annotated[str | None, typer.Option("--like-page", help="Page id whose image is the query")] = None,
    document: Annotated[list[str] | None, typer.Option("--document", help="Only this document id (repeat)")] = None,
    meta: Annotated[list[str] | None, typer.Option("--meta", help="Metadata filter KEY=VALUE (repeat)")] = None,
    pages: Annotated[str | None, typer.Option("--pages", help="Page range, e.g. 3 or 2-5")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only kinds: page, image (repeat)")] = None,
    prefetch: Annotated[int | None, typer.Option("--prefetch", help="Candidates per space before fusion")] = None,
    rrf_k: Annotated[int | None, typer.Option("--rrf-k", help=f"RRF constant, 1..{MAX_RRF_K}")] = None,
    fusion: Annotated[str | None,
                      typer.Option("--fusion", help=f"{' or '.join(FUSIONS)} (default dbsf; rrf with weights)")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Per-space ranks and scores")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list")] = False,
) -> None:
    """Search a corpus; prints a table, or JSON with --json."""
    try:
        req = SearchRequest(query=query, image=image.read_bytes() if image else None, top_k=top_k,
                            document_ids=document or None, metadata=dict(parse_pairs(meta or [], "--meta")),
                            spaces=space or None, weights=parse_weights(weight or []), explain=explain,
                            image_page_id=like_page, pages=parse_pages(pages), kinds=kind or None,
                            prefetch_limit=prefetch, rrf_k=rrf_k, fusion=fusion)
        with open_application() as application:
            results = [e.as_json() for e in application.search(corpus, req).evidence]
    except (MMRAGError, OSError) as exc:
        fail(exc if isinstance(exc, MMRAGError) else InvalidInput(str(exc)))
        return
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    table = Table("#", "score", "kind", "document", "page", "snippet", *(["ranks"] if explain else []))
    for i, r in enumerate(results, 1):
        extra = [json.dumps(r.get("ranks", {}))] if explain else []
        table.add_row(str(i), f"{r['score']:.4f}", r["kind"], r["document"], str(r["page"]), r["snippet"][:80], *extra)
    Console().print(table)
