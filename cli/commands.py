"""Core CLI commands: serve, ingest, corpora, reweight-bm25."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.remote import folder_pipeline, open_application
from mmrag.application import Application
from mmrag.config import load_settings
from mmrag.errors import MMRAGError

console = Console(stderr=True)


def fail(exc: MMRAGError) -> None:
    console.print(f"[red]error[/red] ({exc.code}): {exc.message}")
    raise typer.Exit(2)


def serve(
    host: Annotated[str | None, typer.Option(help="Interface (MMRAG_API__HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (MMRAG_API__PORT)")] = None,
) -> None:
    """Run the REST API on the embedded defaults (no external servers; data in one folder)."""
    import os

    import uvicorn

    from api.app import create_app

    settings = load_settings()
    if host:
        settings.api.host = host
    if port is not None:
        settings.api.port = port
    logging_level = settings.log_level.lower()
    os.environ["MMRAG_SERVER_URL"] = f"http://{settings.api.host}:{settings.api.port}"
    console.print(f"mmrag: data folder {settings.data_dir}; http://{settings.api.host}:{settings.api.port}/docs")
    try:
        # proxy_headers off: the peer is the socket's (MMRAG_API__AUTH=auto judges it; docs/security.md)
        uvicorn.run(create_app(settings), host=settings.api.host, port=settings.api.port, log_level=logging_level,
                    proxy_headers=False)
    except MMRAGError as exc:
        fail(exc)


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")))
        elif p.is_file():
            out.append(p)
        else:
            console.print(f"[red]error[/red]: no such file or folder: {p}")
            raise typer.Exit(2)
    return out


def ingest(
    paths: Annotated[list[Path], typer.Argument(help=(
        "Files or folders: PDF, images, Word, PowerPoint, Excel, OpenDocument, EPUB, HTML, Markdown, text, "
        "CSV/TSV, email (EML)"))],
    corpus: Annotated[str, typer.Option("--corpus", "-c", help="Corpus name (created if missing)")],
    metadata: Annotated[str | None, typer.Option(help="JSON object stored with every file")] = None,
) -> None:
    """Index files into a corpus as a job, with a live progress bar of its pages. Bad files are
    reported with their reason; the rest go on."""
    meta: dict[str, Any] = json.loads(metadata) if metadata else {}
    files = _files(paths)
    try:
        with open_application(run_jobs=True) as application:
            application.ensure_corpus(corpus)
            job_ids, rejected = application.submit(corpus, files, meta)
            jobs = follow_jobs(application, job_ids)
    except MMRAGError as exc:
        fail(exc)
        return
    failures = [(r.filename, r.code, r.message) for r in rejected]
    failures += [(e["filename"], e["error"], e["message"]) for j in jobs for e in j["errors"]]
    for name, code, message in failures:
        console.print(f"  [red]{name}: {code}: {message}[/red]")
    states = [f["state"] for j in jobs for f in j["files"]]
    console.print(f"{states.count('done')} indexed, {states.count('exists')} already present, "
                  f"{len(failures)} failed ({', '.join(j['id'] for j in jobs) or 'no job'})")
    if failures:
        raise typer.Exit(1)


def follow_jobs(application: Application, job_ids: list[str], every: float = 0.3) -> list[dict[str, Any]]:
    """Poll the jobs until they finish, drawing one bar of their pages (total known once planned)."""
    import time

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("pages"),
               TimeElapsedColumn())
    jobs = [application.job(j) for j in job_ids]
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("indexing", total=None)
        while True:
            jobs = [application.job(j) for j in job_ids]
            files = [f for j in jobs for f in j["files"]]
            finished = sum(f["state"] in ("done", "exists", "failed", "cancelled") for f in files)
            progress.update(bar, total=sum(j["pages_total"] for j in jobs) or None,
                            completed=sum(j["pages_done"] + j["pages_failed"] for j in jobs),
                            description=f"indexing {finished}/{len(files)} files")
            if all(j["state"] in ("done", "failed", "cancelled") for j in jobs):
                return jobs
            time.sleep(every)


def corpora() -> None:
    """List corpora."""
    try:
        with open_application() as application:
            rows = application.corpora()
    except MMRAGError as exc:
        fail(exc)
        return
    table = Table("corpus", "documents", "pages", "spaces")
    for r in rows:
        table.add_row(r["name"], str(r["documents"]), str(r["pages"]), ", ".join(r["config"]["spaces"]))
    Console().print(table)


def reweight_bm25(corpus: Annotated[str, typer.Argument(help="Corpus name")]) -> None:
    """Recompute a corpus's stored BM25 vectors from its page text with its average page length (its
    own, or its fixed bm25_avg_len); other vectors stay. The owner does it by itself after a job when the
    corpus's average moved more than 20 %. Runs in-process: stop `mmrag serve` on this folder first."""
    try:
        with folder_pipeline() as pipeline:
            done = pipeline.corpora.reweight_bm25(corpus)
    except MMRAGError as exc:
        fail(exc)
        return
    console.print(f"{corpus}: BM25 of {done.pages} pages re-weighted to average length {done.avg_len:.1f} "
                  f"in {done.seconds:.2f}s ({done.optimize_seconds:.2f}s of it re-indexing)")


def reindex_documents(corpus: Annotated[str, typer.Argument(help="Corpus name")]) -> None:
    """Re-derive every document's evidence (organisations, periods, form, tickers...) of a corpus from its
    stored page words with the current rules, and rewrite it in the catalog, the page payloads and the
    document vectors, and store the ranker's traits of pages written without them; pages are not parsed or
    embedded again. Runs in-process: stop `mmrag serve` on this folder first."""
    try:
        with folder_pipeline() as pipeline:
            done = pipeline.corpora.reindex_documents(corpus)
    except MMRAGError as exc:
        fail(exc)
        return
    console.print(f"{corpus}: evidence of {done.documents} documents re-derived ({done.changed} changed, "
                  f"{done.pages} pages rewritten), traits of {done.traits} pages stored, in {done.seconds:.2f}s")


__all__ = ["Application", "corpora", "fail", "ingest", "reindex_documents", "reweight_bm25", "serve"]
