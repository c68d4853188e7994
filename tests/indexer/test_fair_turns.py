"""Corpora take turns on the Celery path (issue 42): the work of the ``cpu`` and ``gpu`` queues waits in Redis
by corpus and a worker's turn runs the next corpus's next work (`indexer/fair.py`). With a real Redis: the
turns' order, a redelivered turn running its work again, the same work queued once. With real workers: a
large upload in corpus ``a`` and a small one in ``b`` submitted right after it, the workers started once both
wait: ``b``'s plan and parse run among the first four ``cpu`` turns (first come, first served they would come
after all of ``a``'s plans and the parses those plans queued) and ``b`` finishes first."""

from __future__ import annotations

import re
import sys

import httpx
import pytest
import redis

from indexer.fair import FairQueues
from mmrag.jobs.model import Failed, Planned, Work
from tests.api.conftest import Server
from tests.indexer.conftest import FAKE_ENV, Proc
from tests.jobs.helpers import text_pdf, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture()
def fair(redis_url):
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield FairQueues(client)
    client.flushdb()


def drain(fair: FairQueues, queue: str) -> list[tuple[str, str, int]]:
    out, n = [], 0
    while (w := fair.take(queue, f"turn-{n}")) is not None:
        fair.done(queue, f"turn-{n}")
        out.append((w.stage, w.job_id, w.file))
        n += 1
    return out


def test_corpora_take_turns_and_parses_go_before_plans(fair):
    fair.register_job("ja", "a"), fair.register_job("jb", "b")
    for i in range(3):
        fair.push(Work("plan", "ja", i))
    fair.push(Work("parse", "ja", 9, 0))
    fair.push(Work("plan", "jb", 0))
    fair.push(Work("plan", "unregistered", 0))  # a job of no known corpus takes turns of its own
    assert fair.pending("cpu") == {"a": 4, "b": 1, "unregistered": 1}
    assert drain(fair, "cpu") == [("parse", "ja", 9), ("plan", "jb", 0), ("plan", "unregistered", 0),
                                  ("plan", "ja", 0), ("plan", "ja", 1), ("plan", "ja", 2)]
    assert fair.pending("cpu") == {}


def test_a_redelivered_turn_runs_its_work_again_and_work_is_queued_once(fair):
    fair.register_job("j", "c")
    assert fair.push(Work("embed", "j", 0, 1)) is True
    assert fair.push(Work("embed", "j", 0, 1, Failed("x", "again"))) is False  # re-sent: queued once
    fair.push(Work("embed", "j", 0, 2))
    first = fair.take("gpu", "t1")
    assert first == Work("embed", "j", 0, 1, Failed("x", "again"))  # the latest of what it carried
    assert fair.take("gpu", "t1") == first  # the worker died: the same turn again, the same work
    fair.done("gpu", "t1")
    assert fair.take("gpu", "t1") == Work("embed", "j", 0, 2)  # after done: the next work
    fair.done("gpu", "t1")
    assert fair.take("gpu", "t2") is None  # the spare turn of the work queued twice
    assert fair.push(Work("embed", "j", 0, 1, Planned(1, 1))) is True  # taken work may be queued again


def test_a_corpus_at_its_share_is_passed_over_and_the_turn_owed(fair):
    shared = FairQueues(fair.client, cpu_share=1)
    shared.register_job("ja", "a"), shared.register_job("jb", "b")
    shared.push(Work("plan", "ja", 0)), shared.push(Work("plan", "ja", 1)), shared.push(Work("plan", "jb", 0))
    assert shared.take("cpu", "t1") == Work("plan", "ja", 0)
    assert shared.take("cpu", "t2") == Work("plan", "jb", 0)
    assert shared.done("cpu", "t2") is False  # nothing owed
    assert shared.take("cpu", "t3") is None  # a holds its one turn, b has no work: owed
    assert shared.pending("cpu") == {"a": 1}
    assert shared.done("cpu", "t1") is True  # a's turn is over: the owed turn is sent again
    assert shared.take("cpu", "t4") == Work("plan", "ja", 1)
    assert shared.done("cpu", "t4") is False


def ran(log: str, queue: str) -> list[tuple[str, str]]:
    """(stage, job id) of each turn the worker ran, in order."""
    return re.findall(rf"turn {queue}: (\w+) of job (\S+) file", log)


def test_a_small_upload_beside_a_large_one_of_another_corpus_goes_first(tmp_path, redis_url):
    redis.Redis.from_url(redis_url).flushdb()
    data = tmp_path / "data"
    env = {**FAKE_ENV, "MMRAG_JOBS__BROKER_URL": redis_url, "MMRAG_JOBS__BATCH_PAGES": "1",
           "MMRAG_DATA_DIR": str(data)}
    server = Server(data, tmp_path / "server.log", env)
    procs: list[Proc] = []
    try:
        for name in ("a", "b"):
            assert httpx.post(f"{server.url}/corpora", json={"name": name}).status_code == 201
        big = [("files", (f"a{i}.pdf", text_pdf(f"large upload file {i}", 3))) for i in range(8)]
        a = httpx.post(f"{server.url}/corpora/a/documents", files=big, timeout=60).json()["job"]["id"]
        b = httpx.post(f"{server.url}/corpora/b/documents", files=[("files", ("b.pdf", text_pdf("small")))],
                       timeout=60).json()["job"]["id"]
        for role in ("cpu", "gpu"):  # one task at a time each: the order is the queues' alone
            procs.append(Proc([sys.executable, "-m", "cli", "worker", role, "--concurrency", "1", "--pool", "solo"],
                              tmp_path / f"worker-{role}.log", env))

        def state(job_id):
            return httpx.get(f"{server.url}/jobs/{job_id}", timeout=10).json()

        def both():
            jobs = [state(a), state(b)]
            return all(j["finished_at"] for j in jobs) and jobs

        jobs = wait_until(both, timeout=240)
        assert [j["state"] for j in jobs] == ["done", "done"], jobs
        assert jobs[0]["pages_done"] == 24 and jobs[1]["pages_done"] == 1
        cpu, gpu = ran(procs[0].tail(10**7), "cpu"), ran(procs[1].tail(10**7), "gpu")
        assert len(cpu) >= 8 + 24 + 1 + 1 and len(gpu) >= 25, (cpu, gpu)  # every plan, parse and embed
        assert ("plan", b) in cpu[:4] and ("parse", b) in cpu[:4], cpu[:20]
        assert ("embed", b) in gpu[:2], gpu[:10]
        assert jobs[1]["finished_at"] < jobs[0]["finished_at"]
    finally:
        for p in procs:
            p.stop()
        server.stop()
