"""``mmrag answer``: retrieve, read the pages with the VLM (or answer extractively), stream tokens."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from mmrag.cli.commands import fail
from mmrag.cli.remote import running_server
from mmrag.client import Client
from mmrag.config import load_settings
from mmrag.errors import MMRAGError

console = Console(stderr=True)


def _remote_events(url: str, corpus: str, body: dict[str, Any]):  # type: ignore[no-untyped-def]
    """(event, data) pairs from the server's SSE stream."""
    with Client(url, timeout_s=900) as client:
        yield from client.answer_events(corpus, body)


def _local_events(corpus: str, body: dict[str, Any]):  # type: ignore[no-untyped-def]
    from mmrag.generate.answer import event_payloads
    from mmrag.pipeline import build_pipeline

    pipeline = build_pipeline(load_settings(), run_jobs=False)
    try:
        service = pipeline.enable_answers()
        yield from event_payloads(service.answer_stream(corpus, body["question"], body["top_k"],
                                                        body["visual_token_budget"], body["max_new_tokens"]))
    finally:
        pipeline.close()


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
    url = running_server(load_settings().data_dir)
    try:
        events = _remote_events(url, corpus, body) if url else _local_events(corpus, body)
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
    except MMRAGError as exc:
        fail(exc)
