"""Where CLI commands run: over REST against the running server that owns the data folder, or in-process
(the pipeline, its embedded job runner) when none does: the two implementations of the one application
interface, :mod:`mmrag.application`. :func:`open_application` is the one chooser (ingest, search, corpora, answer). Not
chosen here: ``mmrag eval run --api URL`` names its server (an in-process evaluation builds its own
pipeline from the suite's settings, which a running server cannot take), and ``mmrag keys`` falls back
to the data folder's key store when the server refuses the key (that is how the first admin key is made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from mmrag import errors
from mmrag.application import Application
from mmrag.config import load_settings
from mmrag.remote_application import RemoteApplication
from mmrag.rest_client import Client

if TYPE_CHECKING:
    from mmrag.pipeline import Pipeline

def server_client(data_dir: Path, timeout_s: float = 600.0) -> Client | None:
    """A client of the live ``mmrag serve`` that owns ``data_dir`` (it answered ``/health``), if any."""
    try:
        info = json.loads((data_dir / "server.json").read_text())
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    client = Client(str(info["url"]), timeout_s=timeout_s)
    try:
        client.call("GET", "/health", timeout=2.0)
        return client
    except (httpx.HTTPError, errors.MMRAGError):
        client.close()
        return None


def running_server(data_dir: Path) -> str | None:
    """URL of the live ``mmrag serve`` that owns ``data_dir``, if any."""
    client = server_client(data_dir)
    if client is None:
        return None
    client.close()
    return client.base_url


@contextmanager
def folder_pipeline() -> Iterator[Pipeline]:
    """The in-process pipeline (no job runner) of a command that must own the data folder itself:
    Conflict while a ``mmrag serve`` owns it."""
    from mmrag.pipeline import build_pipeline

    settings = load_settings()
    if url := running_server(settings.data_dir):
        raise errors.Conflict(f"mmrag serve ({url}) owns {settings.data_dir}; stop it first")
    pipeline = build_pipeline(settings, run_jobs=False)
    try:
        yield pipeline
    finally:
        pipeline.close()


@contextmanager
def open_application(*, run_jobs: bool = False, timeout_s: float = 600.0) -> Iterator[Application]:
    """The running server's REST API if there is one, else the in-process pipeline (``run_jobs``:
    with its job runner, for commands that ingest): the one place where a command chooses. ``timeout_s``:
    of each REST read (an answer's stream waits for the VLM)."""
    settings = load_settings()
    client = server_client(settings.data_dir, timeout_s)
    if client is not None:
        application: Application = RemoteApplication(client)
    else:
        from mmrag.local_application import LocalApplication
        from mmrag.pipeline import build_pipeline

        application = LocalApplication(build_pipeline(settings, run_jobs=run_jobs))
    try:
        yield application
    finally:
        application.close()
