"""Evaluation jobs for the REST API: start a suite run in the background, follow its
progress, fetch its report.

Lifecycle: one :class:`EvaluationService` per process, built by the composition root
(:func:`mmrag.pipeline.build_pipeline`) over an in-process target (corpora, ingestion, search and the
answer service); runs one evaluation at a time on its own thread (queued ones wait); job state is
kept in ``<root>/<id>/job.json`` so finished reports survive a restart.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mmrag.application import Application
from mmrag.errors import Conflict, InvalidInput, MMRAGError, NotFound, Unavailable
from mmrag.evaluate.report import public_report
from mmrag.evaluate.runner import ProgressEvent, run_suite
from mmrag.evaluate.suite import Suite, load_suite

log = logging.getLogger(__name__)
SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(slots=True)
class EvalJob:
    id: str
    suite: str
    variant: str | None
    corpus: str = ""  # the corpus the suite ingests into and searches (tenant checks)
    state: str = "queued"  # queued | running | done | failed
    stage: str = ""  # ingest | search | answer | report
    done: int = 0
    total: int = 0
    message: str = ""
    error: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None


class EvaluationService:
    def __init__(self, target: Application, root: Path, suites_dir: Path) -> None:
        self.target, self.root, self.suites_dir = target, root, suites_dir
        self.root.mkdir(parents=True, exist_ok=True)
        self._jobs: dict[str, EvalJob] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mmrag-eval")
        for path in sorted(self.root.glob("*/job.json")):
            job = EvalJob(**json.loads(path.read_text()))
            if job.state in ("queued", "running"):  # interrupted by a restart
                job.state, job.error = "failed", "interrupted by a server restart; start it again"
            self._jobs[job.id] = job

    def suites(self) -> list[str]:
        return sorted(p.parent.name for p in self.suites_dir.glob("*/suite.yaml"))

    def start(self, suite: str, variant: str | None = None,
              allow: Callable[[str], None] | None = None) -> EvalJob:
        """Validate the suite now (unknown suite/variant -> error), run it in the background.
        ``allow(corpus)`` may refuse (raise) before anything starts."""
        if not SUITE_NAME.match(suite) or not (self.suites_dir / suite / "suite.yaml").exists():
            raise NotFound(f"unknown suite {suite!r}; available: {self.suites()}")
        corpus = self._load(suite, variant).corpus_name  # InvalidInput: bad variant
        if allow is not None:
            allow(corpus)
        job = EvalJob(id=uuid.uuid4().hex[:16], suite=suite, variant=variant, corpus=corpus)
        self._save(job)
        self._pool.submit(self._run, job)
        return job

    def _load(self, suite: str, variant: str | None) -> Suite:
        """The suite named ``suite`` (its folder under the suites folder). A bad variant is the caller's
        error (InvalidInput, naming the suite by name); any other problem is the server's (Unavailable,
        details in the log only: they name the server's folders)."""
        try:
            return load_suite(self.suites_dir / suite, variant=variant)
        except MMRAGError as exc:
            if exc.detail.get("reason") == "unknown_variant":
                raise
            log.warning("suite %s cannot be loaded: %s", suite, exc.message)
            raise Unavailable(f"suite {suite!r} cannot be loaded on this server (a problem of its installation; "
                              "the server log has the details)") from None

    def get(self, job_id: str) -> EvalJob:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise NotFound(f"unknown evaluation {job_id!r}")
        return job

    def list(self) -> list[EvalJob]:
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: j.created_at)

    def report(self, job_id: str) -> dict[str, Any]:
        job = self.get(job_id)
        if job.state != "done":
            raise Conflict(f"evaluation {job_id} is {job.state}; its report exists once it is done"
                           + (f" ({job.error})" if job.error else ""))
        return public_report(json.loads((self.out_dir(job_id) / "report.json").read_text()), job.suite)

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """Run B against run A (both finished, same suite's dataset): per-metric paired deltas with
        bootstrap intervals and p-values (:func:`mmrag.evaluate.compare.compare_reports`). The runs are
        named by their ids; no server path is in the result."""
        from mmrag.evaluate.compare import compare_reports
        from mmrag.evaluate.report import load_report

        if a == b:
            raise InvalidInput("compare two different runs; a and b are the same evaluation")
        reports = {side: self.report(job_id) for side, job_id in (("a", a), ("b", b))}  # NotFound / Conflict
        result = compare_reports(load_report(self.out_dir(a)), load_report(self.out_dir(b)))
        for side, job_id in (("a", a), ("b", b)):
            spaces = "+".join(reports[side]["config"]["pipeline"].get("spaces") or ["all"])
            result[side] = {"id": job_id, "label": f"{reports[side]['suite']['name']} ({spaces})",
                            "config": reports[side]["config"]}
        return result

    def artefact(self, job_id: str, name: str) -> Path:
        """A file of a finished run (report.md, plots/*.png), refusing paths outside it."""
        self.report(job_id)
        base = self.out_dir(job_id).resolve()
        path = (base / name).resolve()
        if base not in path.parents or not path.is_file():
            raise NotFound(f"evaluation {job_id} has no artefact {name!r}")
        return path

    def out_dir(self, job_id: str) -> Path:
        return self.root / job_id

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _save(self, job: EvalJob) -> None:
        with self._lock:
            self._jobs[job.id] = job
        folder = self.out_dir(job.id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "job.json").write_text(json.dumps(asdict(job)))

    def _progress(self, job: EvalJob, event: ProgressEvent) -> None:
        job.stage, job.done, job.total, job.message = event.stage, event.done, event.total, event.message
        self._save(job)

    def _run(self, job: EvalJob) -> None:
        job.state = "running"
        self._save(job)
        try:
            suite = self._load(job.suite, job.variant)
            report = run_suite(suite, self.target, self.out_dir(job.id), progress=lambda e: self._progress(job, e))
            job.metrics, job.state = report.metrics, "done"
        except MMRAGError as exc:
            job.state, job.error = "failed", f"{exc.code}: {exc.message}"
        except Exception as exc:  # a crashed run must be reported, not lost (its text may name server paths)
            log.exception("evaluation %s failed", job.id)
            job.state, job.error = "failed", f"internal error ({type(exc).__name__}); the server log has the details"
        job.finished_at = time.time()
        self._save(job)


__all__ = ["EvalJob", "EvaluationService", "InvalidInput"]
