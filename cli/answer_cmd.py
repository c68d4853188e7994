"""``mmrag answer``: retrieve, read the pages with the VLM (or answer extractively), stream tokens."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from rich.console import Console

from cli.commands import fail
from cli.remote import open_backend
from mmrag.errors import MMRAGError

console = Console(stderr=True)


def answer(
    question: Annotated[str, typer.Argument(help="The question")],
    corpus: Annotated[str, typer.Option("--corpus", "-c")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Pages retrieved as candidate evidence")] = 5,
    budget: Annotated[int | None, typer.Option("--visual-tokens", help="Visual-token budget for all pages")] = None,
    max_new_tokens: Annotated[int | None, typer.Option(help="Cap on generated tokens")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the final answer event as JSON")] = False,
) -> None:
    """Answer a question from a corpus, streaming the answer, then the cited pages and timings."""
    body = {"question": question, "top_k": top_k, "visual_token_budget": budget, "max_new_tokens": max_new_tokens,
            "stream": True}
    try:
        with open_backend(timeout_s=900) as backend:
            show_answer(backend.answer_events(corpus, body), as_json)
    except MMRAGError as exc:
        fail(exc)


def show_answer(events: Iterator[tuple[str, Any]], as_json: bool) -> None:
    """Stream the tokens, then the notice, the cited pages and the timings (or the done event as JSON)."""
    for event, data in events:
        if event == "token" and not as_json:
            sys.stdout.write(data["text"])
            sys.stdout.flush()
        elif event == "error":
            console.print(f"\n[red]error[/red] ({data['code']}): {data['message']}")
            raise typer.Exit(2)
        elif event == "done":
            if as_json:
                sys.stdout.write(json.dumps(data, indent=2) + "\n")
                return
            sys.stdout.write("\n")
            if data.get("notice"):
                console.print(f"[yellow]{data['notice']}[/yellow]")
            for c in data["citations"]:
                console.print(f"  [{c['n']}] {c['filename']} p.{c['page']}")
            console.print(f"mode: {data['mode']}; " + ", ".join(
                f"{k} {v:.2f}s" for k, v in data["timings"].items() if k.endswith("_s")))
