"""``mmrag answer``: retrieve, read the pages with the VLM (or answer extractively), stream tokens."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated

import typer
from rich.console import Console

from cli.commands import fail
from cli.remote import open_application
from mmrag.application import AnswerRequest
from mmrag.errors import MMRAGError
from mmrag.generate.answer_events import AnswerDone, AnswerError, AnswerEvent, TokenDelta, event_payload

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
    request = AnswerRequest(question, top_k, budget, max_new_tokens)
    try:
        with open_application(timeout_s=900) as application:
            show_answer(application.answer(corpus, request), as_json)
    except MMRAGError as exc:
        fail(exc)


def show_answer(events: Iterator[AnswerEvent], as_json: bool) -> None:
    """Stream the tokens, then the notice, the cited pages and the timings (or the done event as JSON)."""
    for event in events:
        if isinstance(event, TokenDelta) and not as_json:
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, AnswerError):
            console.print(f"\n[red]error[/red] ({event.code}): {event.message}")
            raise typer.Exit(2)
        elif isinstance(event, AnswerDone):
            if as_json:
                sys.stdout.write(json.dumps(event_payload(event)[1], indent=2) + "\n")
                return
            sys.stdout.write("\n")
            if event.notice:
                console.print(f"[yellow]{event.notice}[/yellow]")
            for c in event.citations:
                console.print(f"  [{c.n}] {c.filename} p.{c.page}")
            console.print(f"mode: {event.mode}; " + ", ".join(
                f"{k} {v:.2f}s" for k, v in event.timings.items() if k.endswith("_s")))
