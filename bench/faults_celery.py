"""The kill harness on the distributed path (``python -m bench.faults --path celery``): Redis as the broker,
``mmrag serve`` as the owner of the store (it consumes the ``write`` queue: the single writer), one ``mmrag
worker cpu`` (plan, parse) and one ``mmrag worker gpu`` (embed), each with the probes of
:mod:`bench.fault_probe`. A kill aimed at ``parse`` or ``embed`` SIGKILLs the worker that runs the stage, which
is replaced by a new one (as a supervisor would): its task was acknowledged late, so Redis hands it to the new
worker once the visibility timeout (6 s here) has passed; the job's stall watchdog (15 s) re-sends work a
broker lost. A kill aimed at the writer's stages (``write``, ``finish_file``, ``reweight``, ``optimize``,
``delete``) SIGKILLs the server, which restarts on its folder while the workers keep running.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from bench._http import free_port, stop_server
from bench.distributed_ceiling import start_worker
from bench.fairness_celery import start_redis
from bench.faults import ENV, MakeServer, Server

ROLES = ("cpu", "gpu")
CELERY_ENV = {"MMRAG_JOBS__VISIBILITY_TIMEOUT_S": "6", "MMRAG_JOBS__STALL_S": "15"}


class Cluster:
    """The broker and the workers of the data folder in use (one folder at a time: a new folder, an episode,
    starts on an empty broker with new workers)."""

    def __init__(self, broker: str, logs: Path) -> None:
        self.broker, self.logs = broker, logs
        self.data: Path | None = None
        self.workers: dict[int, tuple[str, subprocess.Popen[bytes]]] = {}  # pid -> (role, process)
        self.started = 0

    def env(self, data: Path, probe: Path) -> dict[str, str]:
        return {**ENV, **CELERY_ENV, "MMRAG_JOBS__BROKER_URL": self.broker, "MMRAG_DATA_DIR": str(data),
                "MMRAG_FAULT_PROBE": str(probe)}

    def start(self, role: str, data: Path, probe: Path) -> None:
        self.started += 1
        proc = start_worker(role, self.env(data, probe), self.logs / f"worker-{role}-{self.started}.log",
                            entry="bench.fault_probe")
        self.workers[proc.pid] = (role, proc)

    def serve(self, data: Path, probe: Path) -> None:
        """Workers for ``data`` (new ones on an empty broker when the folder changed)."""
        if self.data != data:
            self.stop_workers()
            redis.Redis.from_url(self.broker).flushdb()
            self.data = data
        for role in ROLES:
            if not any(r == role and p.poll() is None for r, p in self.workers.values()):
                self.start(role, data, probe)

    def kill_worker(self, pid: int, probe: Path) -> bool:
        """SIGKILL the worker ``pid`` and start another of its role; False when ``pid`` is no worker."""
        if pid not in self.workers or self.data is None:
            return False
        role, proc = self.workers.pop(pid)
        proc.kill()
        proc.wait()
        self.start(role, self.data, probe)
        return True

    def stop_workers(self) -> None:
        for _, proc in self.workers.values():
            stop_server(proc)
        self.workers.clear()
        self.data = None


class CeleryServer(Server):
    """``mmrag serve`` (with probes) in distributed mode, and the cluster's workers for its folder."""

    def __init__(self, data_dir: Path, probe: Path, cluster: Cluster) -> None:
        self.cluster = cluster
        super().__init__(data_dir, probe, {**CELERY_ENV, "MMRAG_JOBS__BROKER_URL": cluster.broker})
        cluster.serve(data_dir, probe)

    def kill_for(self, thread: str) -> None:
        if not self.cluster.kill_worker(int(thread.split(":")[0]), self.probe):
            self.kill()

    def stop(self) -> None:
        super().stop()
        self.cluster.stop_workers()


@contextmanager
def celery_deployment(folder: Path) -> Iterator[MakeServer]:
    """Redis on 127.0.0.1 for the run; yields the factory of :class:`CeleryServer` s."""
    logs = Path(tempfile.mkdtemp(prefix="logs-", dir=folder))
    port = free_port()
    broker = start_redis(port, logs / "redis.log")
    cluster = Cluster(f"redis://127.0.0.1:{port}/0", logs)
    try:
        yield lambda data, probe: CeleryServer(data, probe, cluster)
    finally:
        cluster.stop_workers()
        stop_server(broker)
        os.sync()
