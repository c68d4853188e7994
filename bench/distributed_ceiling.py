"""The distributed ingest path at its ceiling (issue 41): pages/s of Celery ``cpu`` workers (plan, parse), one
``gpu`` worker (embed) and the single writer (``mmrag serve``, the owner of the embedded store, consuming the
``write`` queue), with embedding made free, for 1, 2 and 4 ``cpu`` workers; and the writer's own pages/s.

Free embedding: the text space embeds with ``fake:384`` (:mod:`tests.fixtures.fake_embedders`: a hash-seeded
random unit vector per item, the shape of MiniLM's, microseconds each), registered in every subprocess through
``MMRAG_EMBED__BACKENDS``; for this measurement only, never a product backend. CLIP and ColPali are off (this
box has no weights for them: its real deployment is text-only too), so parse renders no page images.

Real processes on 127.0.0.1, stopped by PID: Redis (a free port, no persistence), ``mmrag serve``, one
``mmrag worker gpu`` for the whole run and, per arm, ``N`` ``mmrag worker cpu`` processes (one task at a time
each, started and ready before the upload, stopped after). An arm uploads the same real PDFs (``--files``,
default the five 2022 Q3 10-Qs of ``shared/corpus/sec-10q``, 268 pages) into a fresh corpus in one job and
waits for it to be done. Arms ``w1``, ``w2``, ``w4`` (``--workers``) alternate over ``--rounds`` (ABBA).

Per run, from the job's own record: pages/s = pages / (finished_at - created_at), the whole path; the writer's
pages/s = pages / (summed ``write`` seconds + ``bm25_reweight``), what the one writer thread could sustain alone
(catalog rows, page images, upsert into the store; the job's ``optimize`` is not timed by the job and is left
out); ``writer_busy`` = that writer time / the job's wall time (near 1: the writer caps the cluster). The summed
``parse`` and ``embed`` seconds are printed per run too (summed over workers, so above the wall time when
workers overlap). ``owner_cpu_pps`` = pages / the CPU seconds the ``mmrag serve`` process used during the job: a
bound on the writer that counts everything it does (finishing files, the document rows, ``optimize``) and the
API's own work beside it (the upload, the job polls).

    python -m bench.distributed_ceiling [--workers 1,2,4] [--rounds 2] [--files GLOB] [--engine edge|local]

``--engine local`` runs the owner's store through qdrant-client (the code path of a Qdrant server deployment)
in its local mode: no Qdrant server can be installed on this box, so that arm shows what the client path costs
the writer, not what a server would sustain.

ends with ``RESULT pps_w1=.. pps_w1_lo=.. pps_w1_hi=.. pps_w2=.. .. writer_pps=.. owner_cpu_pps=.. writer_busy_w<max>=..
pages=..`` and the load.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench._http import OFFLINE, free_port, start_server, stop_server
from bench._stats import alternate, machine_line, result_line
from bench.fairness_celery import start_redis
from mmrag.evaluate.stats import interval
from tests.fixtures.fake_embedders import BACKENDS_ENV

SEC_10Q = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "sec-10q" / "pdf"
FREE_EMBEDDING = {**BACKENDS_ENV, "MMRAG_EMBED__TEXT_MODEL": "fake:384", "MMRAG_EMBED__CLIP_MODEL": "",
                  "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none", "TOKENIZERS_PARALLELISM": "false"}


@dataclass(slots=True)
class Run:
    """One job of one arm, read from ``GET /jobs/{id}`` when it is done."""

    pages: int
    wall_s: float  # finished_at - created_at
    timings: dict[str, float]  # stage -> seconds summed over batches
    owner_cpu_s: float  # CPU seconds of the `mmrag serve` process during the job (writer thread, API, polls)

    @property
    def pps(self) -> float:
        return self.pages / self.wall_s

    @property
    def writer_s(self) -> float:
        return self.timings.get("write", 0.0) + self.timings.get("bm25_reweight", 0.0)

    @property
    def writer_pps(self) -> float:
        return self.pages / self.writer_s

    @property
    def writer_busy(self) -> float:
        return self.writer_s / self.wall_s

    @property
    def owner_pps(self) -> float:
        """Pages per CPU second of the owner: a bound on the writer that counts all it does (finishing files,
        the document rows, ``optimize``) and the API's work beside it."""
        return self.pages / self.owner_cpu_s


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_worker(role: str, env: dict[str, str], log: Path, timeout_s: float = 120.0,
                 entry: str = "cli") -> subprocess.Popen[bytes]:
    """``mmrag worker <role>`` (one task at a time; ``entry``: the module that runs the CLI), returned once
    Celery says it is ready."""
    proc = subprocess.Popen([sys.executable, "-m", entry, "worker", role, "--concurrency", "1", "--pool", "solo"],
                            env={**os.environ, **OFFLINE, **env}, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while " ready." not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"worker {role} did not start: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    return proc


def ingest(http: httpx.Client, corpus: str, files: list[Path], timeout_s: float, owner: int) -> Run:
    """One job of ``files`` into a new corpus ``corpus``, waited for until it is done; ``owner``: the PID of
    ``mmrag serve``."""
    cpu0 = cpu_seconds(owner)
    assert http.post("/corpora", json={"name": corpus}).status_code == 201
    r = http.post(f"/corpora/{corpus}/documents", files=[("files", (p.name, p.read_bytes())) for p in files])
    assert r.status_code == 202, r.text
    job_id = r.json()["job"]["id"]
    deadline = time.monotonic() + timeout_s
    while (job := http.get(f"/jobs/{job_id}").json())["state"] not in ("done", "failed", "cancelled"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} not done in {timeout_s:.0f}s: {job}")
        time.sleep(0.2)
    if job["state"] != "done" or job["errors"] or job["pages_done"] != job["pages_total"]:
        raise RuntimeError(f"job {job_id} did not ingest every page: {job}")
    return Run(job["pages_done"], job["finished_at"] - job["created_at"], job["timings"], cpu_seconds(owner) - cpu0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2,4", help="`mmrag worker cpu` processes of each arm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--files", default=str(SEC_10Q / "2022 Q3 *.pdf"), help="glob of the PDFs each run ingests")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one job may take")
    ap.add_argument("--quick", action="store_true", help="short mode: 1 and 2 workers, 2 rounds")
    ap.add_argument("--engine", choices=["edge", "local"], default="edge",
                    help="the owner's store: the embedded engine (default) or qdrant-client, the client the server "
                         "deployments use, here in its local mode (no Qdrant server can run on this box)")
    args = ap.parse_args()
    if args.quick:
        args.workers, args.rounds = "1,2", 2
    counts = [int(n) for n in args.workers.split(",")]
    files = sorted(Path(p) for p in glob.glob(args.files))
    if not files:
        raise SystemExit(f"no PDFs match {args.files}")

    print(machine_line(), flush=True)
    print(f"{len(files)} PDFs ({args.files}); cpu workers per arm: {counts}; store engine {args.engine}; "
          f"{os.cpu_count()} cores on this box", flush=True)
    procs: list[subprocess.Popen[bytes]] = []
    runs: dict[str, list[Run]] = {f"w{n}": [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-ceiling-") as tmp:
        folder = Path(tmp)
        port = free_port()
        procs.append(start_redis(port, folder / "redis.log"))
        env = {**FREE_EMBEDDING, "MMRAG_DATA_DIR": str(folder / "data"),
               "MMRAG_JOBS__BROKER_URL": f"redis://127.0.0.1:{port}/0", "MMRAG_STORE__ENGINE": args.engine}
        api = free_port()
        url = f"http://127.0.0.1:{api}"
        try:
            server = start_server([sys.executable, "-m", "cli", "serve", "--port", str(api)], f"{url}/health",
                                  env=env, log=folder / "server.log")
            procs.append(server)
            procs.append(start_worker("gpu", env, folder / "worker-gpu.log"))
            http = httpx.Client(base_url=url, timeout=600)

            def arm(n: int) -> Callable[[int], float]:
                def one(r: int) -> float:
                    print(f"  w{n} round {r + 1}: starting {n} cpu workers, load {os.getloadavg()[0]:.2f}", flush=True)
                    cpu = [start_worker("cpu", env, folder / f"worker-cpu-{n}-{r}-{i}.log") for i in range(n)]
                    try:
                        run = ingest(http, f"w{n}r{r}", files, args.timeout, server.pid)
                    finally:
                        for p in cpu:
                            stop_server(p)
                    runs[f"w{n}"].append(run)
                    t = run.timings
                    print(f"  w{n} round {r + 1}: {run.pages} pages in {run.wall_s:.1f}s = {run.pps:.2f} pages/s; "
                          f"writer {run.writer_s:.1f}s ({run.writer_pps:.1f} pages/s, busy {run.writer_busy:.0%}); "
                          f"owner CPU {run.owner_cpu_s:.1f}s ({run.owner_pps:.1f} pages/s); "
                          f"summed parse {t.get('parse', 0):.1f}s embed {t.get('embed', 0):.1f}s "
                          f"plan {t.get('plan', 0):.1f}s; load {os.getloadavg()[0]:.2f}", flush=True)
                    return run.pps
                return one

            alternate({f"w{n}": arm(n) for n in counts}, args.rounds)
        finally:
            for proc in reversed(procs):
                stop_server(proc)
    print(machine_line())
    every = [run for arm_runs in runs.values() for run in arm_runs]
    top = f"w{max(counts)}"
    print(result_line({**{f"pps_{name}": interval([r.pps for r in rs]) for name, rs in runs.items()},
                       "writer_pps": interval([r.writer_pps for r in every]),
                       "owner_cpu_pps": interval([r.owner_pps for r in every]),
                       f"writer_busy_{top}": interval([r.writer_busy for r in runs[top]]),
                       "pages": every[0].pages, "rounds": args.rounds, "cores": os.cpu_count() or 1}))


if __name__ == "__main__":
    main()
