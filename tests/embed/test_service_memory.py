"""The embedding service hands freed memory back like the server and the workers (mmrag/process_memory.py):
its trimmer starts with the app and stops with it."""

from __future__ import annotations

import threading
import time

from fastapi.testclient import TestClient

from api.embed_server import create_embed_app
from mmrag.process_memory import _glibc


def _trimmer_threads() -> int:
    return sum(t.name == "mmrag-malloc-trim" and t.is_alive() for t in threading.enumerate())


def test_the_service_trims_while_it_runs_and_stops_trimming_with_it() -> None:
    before = _trimmer_threads()
    app = create_embed_app([], memory=(2, 0.02))
    with TestClient(app) as client:
        assert client.get("/health").status_code in (200, 503)
        trimmer = app.state.trimmer
        assert trimmer.every_s == 0.02
        assert _glibc() is not None  # the service's platform (Debian): glibc, whose malloc_trim it calls
        deadline = time.monotonic() + 10
        while trimmer.trims < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert trimmer.trims >= 2 and _trimmer_threads() == before + 1
    assert _trimmer_threads() == before
    untouched = create_embed_app([])
    with TestClient(untouched):
        assert untouched.state.trimmer is None and _trimmer_threads() == before
