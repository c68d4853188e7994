"""Locust users of the load test (bench/load.py starts them): mixed search / answer / upload traffic,
each user holding one tenant's write key (``MMRAG_LOAD_TENANTS``: JSON list of [corpus, key]).

429s (per-key rate, per-key job cap) are documented answers: they are recorded under their own
name (``... [429]``) as successes, so that the failure table holds only what should never happen.
"""

from __future__ import annotations

import itertools
import json
import os

from locust import HttpUser, between, task

from bench._load_docs import QUERIES, small_pdf  # bench/load.py runs locust with the repository on PYTHONPATH

TENANTS: list[list[str]] = json.loads(os.environ.get("MMRAG_LOAD_TENANTS", "[]"))
_next_tenant = itertools.count()
_next_doc = itertools.count(10_000)


class Tenant(HttpUser):
    wait_time = between(0.05, 0.2)

    def on_start(self) -> None:
        self.corpus, key = TENANTS[next(_next_tenant) % len(TENANTS)]
        self.client.headers["Authorization"] = f"Bearer {key}"
        self.q = itertools.cycle(QUERIES)

    def _post(self, name: str, path: str, **kwargs: object) -> None:
        with self.client.post(path, name=name, catch_response=True, **kwargs) as r:  # type: ignore[arg-type]
            if r.status_code == 429:
                r.request_meta["name"] = f"{name} [429]"
                r.success()
            elif not 200 <= r.status_code < 300:
                r.failure(f"HTTP {r.status_code}: {r.text[:200]}")

    @task(6)
    def search(self) -> None:
        self._post("search", f"/corpora/{self.corpus}/search", json={"query": next(self.q), "top_k": 5})

    @task(2)
    def answer(self) -> None:
        self._post("answer", f"/corpora/{self.corpus}/answer", json={"question": next(self.q), "stream": False})

    @task(1)
    def upload(self) -> None:
        n = next(_next_doc)
        self._post("upload", f"/corpora/{self.corpus}/documents", files=[("files", (f"load-{n}.pdf", small_pdf(n)))])
