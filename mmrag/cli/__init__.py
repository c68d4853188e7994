"""The ``mmrag`` command line: a shell like the API (parse, call the pipeline, print).

When ``mmrag serve`` owns the data folder, ``ingest`` and ``search`` talk to it over REST
(the embedded store has one owner process); otherwise they run in-process.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Annotated

import typer

from mmrag.cli.commands import corpora, ingest, serve
from mmrag.cli.search_cmd import search

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="mmrag: multimodal RAG over PDFs, scans and images.")
app.command()(serve)
app.command()(ingest)
app.command()(search)
app.command()(corpora)


def _optional(module: str, attr: str, name: str, group: bool) -> None:
    """Register a command group written in its own module (eval, embed-serve, answer, ...)."""
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return
    if group:
        app.add_typer(obj, name=name)
    else:
        app.command(name=name)(obj)


_optional("mmrag.cli.embed_cmd", "embed_serve", "embed-serve", group=False)
_optional("mmrag.cli.eval_cmd", "eval_app", "eval", group=True)
_optional("mmrag.cli.answer_cmd", "answer", "answer", group=False)
_optional("mmrag.cli.worker_cmd", "worker_app", "worker", group=True)


@app.callback()
def _root(
    data_dir: Annotated[Path | None, typer.Option(envvar="MMRAG_DATA_DIR", help="Data folder")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if data_dir is not None:
        import os

        os.environ["MMRAG_DATA_DIR"] = str(data_dir)


def main() -> None:
    app()
