"""Fair ingestion across corpora on the Celery path (issue 42): a one-page upload's time to done while
another corpus ingests nested-XObject bombs, over the same upload alone; ``bench.fairness`` measures the
embedded runner the same way.

Real processes on 127.0.0.1, stopped by PID: Redis (a free port, no persistence), ``mmrag serve`` (the
owner: embedded store, consumes the ``write`` queue), ``--cpu-workers`` ``mmrag worker cpu`` processes (one
task at a time each) and one ``mmrag worker gpu`` (MiniLM), corpora ``bomb`` and ``small``,
``MMRAG_JOBS__CORPUS_SHARE=--share``. Arms, ABBA-alternated over ``--rounds``:

- ``alone``: a one-page text PDF (unique bytes each time) uploaded to ``small`` with ``?wait=true``, timed
  from the request to the answer (the job done);
- ``beside``: ``--bombs`` bombs (``tests.jobs.hostile_pdfs.nested_xobjects(12)``, distinct bytes: minutes of
  drawing each) uploaded to ``bomb`` in one job, then, ``--gap`` seconds later, the same upload to ``small``,
  timed the same way; then the bomb job is cancelled and the next arm waits until no ``cpu`` turn is held.

Each arm ends with ``--settle`` seconds of quiet: a cancelled bomb's parse worker is killed and its
replacement starts meanwhile (at a load of 15 an upload landing on it waited ~5 s more: a first run without
the settling time had ``alone`` after ``beside`` at 4-6 s, before it at 0.6 s).

As in ``bench.fairness`` the up-front drawing check is off so each bomb holds its worker for its whole
clock (``--budget`` seconds). With the default 3 bombs, 2 cpu workers and a share of 1, first come, first
served would give both workers to bombs and the small upload would wait a budget; with turns one worker
stays free for ``small``. Per round: ``beside / alone``.

    python -m bench.fairness_celery [--rounds 12] [--budget 30] [--gap 0.5] [--bombs 3] [--cpu-workers 2]
                                    [--share 1]

ends with ``RESULT celery_fairness_ratio=.. celery_fairness_ratio_lo=.. celery_fairness_ratio_hi=.. alone_s=..
beside_s=..`` (target: ``celery_fairness_ratio_hi <= 2``) and the load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis

from bench._http import OFFLINE, free_port, start_server, stop_server
from bench._stats import alternate, machine_line, paired_result
from bench.fairness import one_page
from indexer.fair import FairQueues


def start_redis(port: int, log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc
        except redis.ConnectionError:
            time.sleep(0.1)
    stop_server(proc)
    raise RuntimeError(f"redis-server did not start: {log.read_text()[-1000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--budget", type=float, default=30.0, help="parse_timeout_s and page_timeout_s of the run")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between the bombs' upload and the small one")
    ap.add_argument("--bombs", type=int, default=3, help="bombs in the bomb corpus's job")
    ap.add_argument("--cpu-workers", type=int, default=2, help="`mmrag worker cpu` processes")
    ap.add_argument("--share", type=int, default=1, help="MMRAG_JOBS__CORPUS_SHARE (0: no bound)")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds after each arm (a killed bomb's parse worker is replaced meanwhile)")
    ap.add_argument("--quick", action="store_true", help="short mode: 4 rounds")
    args = ap.parse_args()
    if args.quick:
        args.rounds = 4

    from tests.jobs.hostile_pdfs import nested_xobjects

    print(machine_line(), flush=True)
    bomb = nested_xobjects(12)
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-fair-celery-") as tmp:
        folder = Path(tmp)
        port = free_port()
        procs.append(start_redis(port, folder / "redis.log"))
        broker = f"redis://127.0.0.1:{port}/0"
        env = {"MMRAG_DATA_DIR": str(folder / "data"), "MMRAG_JOBS__BROKER_URL": broker,
               "MMRAG_JOBS__CORPUS_SHARE": str(args.share), "MMRAG_EMBED__CLIP_MODEL": "",
               "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none",
               "MMRAG_INGEST__PARSE_TIMEOUT_S": str(args.budget), "MMRAG_INGEST__PAGE_TIMEOUT_S": str(args.budget),
               "MMRAG_INGEST__MAX_PAGE_DRAWS": str(10**12), "MMRAG_INGEST__MAX_PAGE_CONTENT_BYTES": str(10**15),
               "TOKENIZERS_PARALLELISM": "false"}
        api = free_port()
        url = f"http://127.0.0.1:{api}"
        try:
            procs.append(start_server([sys.executable, "-m", "cli", "serve", "--port", str(api)], f"{url}/health",
                                      env=env, log=folder / "server.log"))
            roles = ["cpu"] * args.cpu_workers + ["gpu"]
            for i, role in enumerate(roles):
                log = (folder / f"worker-{role}-{i}.log").open("wb")
                procs.append(subprocess.Popen([sys.executable, "-m", "cli", "worker", role, "--concurrency", "1",
                                               "--pool", "solo"], env={**os.environ, **OFFLINE, **env}, stdout=log,
                                              stderr=subprocess.STDOUT))
            times = run_arms(url, FairQueues(redis.Redis.from_url(broker)), bomb, args)
        finally:
            for proc in reversed(procs):
                stop_server(proc)
    paired_result("celery_fairness_ratio", "beside the bombs / alone, Celery", times, "beside", "alone", 2.0,
                  at_least=False, extra={"budget_s": args.budget, "bombs": args.bombs, "cpu_workers": args.cpu_workers,
                                         "share": args.share})


def run_arms(url: str, fair: FairQueues, bomb: bytes, args: argparse.Namespace) -> dict[str, list[float]]:
    counter = iter(range(10**6))
    http = httpx.Client(base_url=url, timeout=600)
    for name in ("bomb", "small"):
        assert http.post("/corpora", json={"name": name}).status_code == 201

    def small_upload() -> float:
        t0 = time.perf_counter()
        r = http.post("/corpora/small/documents", params={"wait": "true"},
                      files=[("files", ("note.pdf", one_page(str(next(counter)))))])
        assert r.status_code == 201, r.text
        return time.perf_counter() - t0

    def idle() -> None:  # no turn held, no work queued: the bombs' workers are free again
        deadline = time.monotonic() + args.budget * (args.bombs + 2)
        while time.monotonic() < deadline and (fair.client.hlen("mmrag:fair:cpu:held") or fair.pending("cpu")):
            time.sleep(0.2)

    def beside(_: int) -> float:
        files = [("files", (f"bomb{i}.pdf", bomb + b"%" + str(next(counter)).encode())) for i in range(args.bombs)]
        r = http.post("/corpora/bomb/documents", files=files)
        assert r.status_code == 202, r.text
        job = r.json()["job"]["id"]
        time.sleep(args.gap)
        seconds = small_upload()
        still = http.get(f"/jobs/{job}").json()["state"] not in ("done", "failed", "cancelled")
        http.post(f"/jobs/{job}/cancel")
        idle()
        print(f"  beside: {seconds:.2f}s (bombs still parsing: {still}) load {_load():.1f}", flush=True)
        time.sleep(args.settle)
        return seconds

    def alone(_: int) -> float:
        seconds = small_upload()
        print(f"  alone: {seconds:.2f}s load {_load():.1f}", flush=True)
        time.sleep(args.settle)
        return seconds

    small_upload()  # the workers have started (the upload waits for them) and are warm
    return alternate({"alone": alone, "beside": beside}, args.rounds)


def _load() -> float:
    return os.getloadavg()[0]


if __name__ == "__main__":
    main()
