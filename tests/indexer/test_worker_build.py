"""`mmrag worker <role>` builds what its queues need, once: the write roles build the pipeline (and
embed with its spaces), the gpu role builds the embedders, the cpu role none."""

from __future__ import annotations

import pytest

import mmrag.pipeline
from indexer.worker import WorkerMemory, build_worker
from tests.conftest import make_settings


@pytest.mark.parametrize("role,builds", [("all", 1), ("write", 1), ("gpu", 1), ("cpu", 0)])
def test_each_role_builds_the_embedders_at_most_once(tmp_path, monkeypatch, role, builds):
    real, calls = mmrag.pipeline.build_embedders, []

    def counting(settings):  # the real function, counted
        calls.append(settings)
        return real(settings)

    monkeypatch.setattr(mmrag.pipeline, "build_embedders", counting)
    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:384"
    settings.jobs.broker_url = "redis://127.0.0.1:9/0"  # never contacted: building a worker connects nothing
    app = build_worker(settings, role)
    assert len(calls) == builds
    assert {"mmrag.plan", "mmrag.parse", "mmrag.embed"} <= set(app.tasks)


def test_a_second_worker_in_one_process_runs_its_own_tasks(tmp_path):
    """Celery registers a task on every app the process finalizes later unless ``shared=False``: a second
    worker app got the first one's closures (its context, its writer) under the same names."""
    import warnings

    from celery.exceptions import DuplicateTaskNameWarning

    apps = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateTaskNameWarning)
        for name in ("one", "two"):
            settings = make_settings(tmp_path / name)
            settings.embed.text_model = "fake:384"
            settings.jobs.broker_url = "redis://127.0.0.1:9/0"
            app = build_worker(settings, "cpu")
            apps.append({n: t for n, t in app.tasks.items() if n.startswith("mmrag.")})  # finalizes the app
    first, second = apps
    assert set(first) == set(second) and "mmrag.parse" in first
    for n in first:
        assert second[n]._decorated_fun is not first[n]._decorated_fun, n  # type: ignore[attr-defined]


def _trimmer_threads() -> int:
    import threading

    return sum(t.name == "mmrag-malloc-trim" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("pool,children", [("solo", 0), ("threads", 0), ("prefork", 2)])
def test_a_worker_trims_its_memory_in_the_process_that_runs_the_tasks(tmp_path, pool, children):
    """The process that runs the tasks has a trimmer: the worker's own (solo, threads) or each prefork child's,
    started by Celery's ``worker_process_init`` (sent here as a child sends it after the fork)."""
    from celery.signals import worker_process_init

    settings = make_settings(tmp_path / "data")
    settings.api.malloc_trim_s = 0.05
    before = _trimmer_threads()
    memory = WorkerMemory(settings, pool)
    try:
        for _ in range(children):
            worker_process_init.send(sender=None)
        assert _trimmer_threads() == before + 1 + children
        assert all(t.every_s == 0.05 for t in memory.trimmers)
    finally:
        memory.close()
    assert _trimmer_threads() == before
    worker_process_init.send(sender=None)  # disconnected on close: no trimmer is left behind
    assert _trimmer_threads() == before
