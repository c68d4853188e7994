"""The ``mmrag`` command line: a shell like the API (parse, call the pipeline, print).

When ``mmrag serve`` owns the data folder, ``ingest`` and ``search`` talk to it over REST
(the embedded store has one owner process); otherwise they run in-process.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from cli.answer_cmd import answer
from cli.commands import corpora, ingest, reindex_documents, reweight_bm25, serve
from cli.config_cmd import config
from cli.embed_cmd import embed_serve
from cli.eval_cmd import eval_app
from cli.keys_cmd import keys_app
from cli.mcp_cmd import mcp
from cli.rank_cmd import rank_app
from cli.search_cmd import search
from cli.worker_cmd import worker_app

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="mmrag: multimodal RAG over PDFs, scans and images.")
app.command()(serve)
app.command()(ingest)
app.command()(search)
app.command()(corpora)
app.command(name="reweight-bm25")(reweight_bm25)
app.command(name="reindex-documents")(reindex_documents)
app.command(name="embed-serve")(embed_serve)
app.add_typer(eval_app, name="eval")
app.command(name="answer")(answer)
app.add_typer(worker_app, name="worker")
app.add_typer(keys_app, name="keys")
app.add_typer(rank_app, name="rank")
app.command(name="mcp")(mcp)
app.command(name="config")(config)


@app.callback()
def _root(
    data_dir: Annotated[Path | None, typer.Option(envvar="MMRAG_DATA_DIR", help="Data folder")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    api_key: Annotated[str | None, typer.Option("--api-key", envvar="MMRAG_API_KEY", show_envvar=True,
                                                help="API key for a server that requires one")] = None,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not verbose:
        from mmrag.hub import quiet_hub_clients

        quiet_hub_clients()  # one line per model that is off (ours), not the hub clients' retries
    import os

    if data_dir is not None:
        os.environ["MMRAG_DATA_DIR"] = str(data_dir)
    if api_key:
        os.environ["MMRAG_API_KEY"] = api_key  # read by mmrag.rest_client.Client


def main() -> None:
    app()
