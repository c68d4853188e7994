"""Kill at any moment (issue 42): SIGKILL ``mmrag serve`` inside each stage of a real ingest, restart it on the
same data folder, let the jobs finish, and check that nothing was lost, duplicated or left running.

    python -m bench.faults --kills 50 [--seed 0] [--data-dir DIR] [--minutes M]

An **episode** runs a fixed script of operations on a fresh data folder over REST: three corpora (a, b, c) get
PDFs of ``shared/corpus/docling`` and office files of ``shared/corpus/formats`` (converted to PDF) as three
concurrent jobs, then two more jobs, two deletions and a re-upload (:data:`SCRIPT`). A **clean** episode
(no kill) runs once first: after each operation it records the documents of every corpus and the ranking of
each search (:data:`QUERIES`) — the reference.

Each operation of the later episodes is one **kill cycle**: the server starts with a target stage (the probes
of :mod:`bench.fault_probe`: ``parse``, ``embed``, ``write``, ``finish_file``, ``reweight``, ``optimize``,
``delete``; seeded, each stage in turn), the operation is sent, and once the target stage is entered the server
gets SIGKILL, either after the stage's k-th durable write (``step``: the kill lands between two writes) or after
a seeded random delay (``time``: anywhere, a write included). The stages running at the moment of the kill are
read back from the probe file (``hit``). Then the server restarts on the same folder (no target), the
operation's jobs must end ``done`` (a deletion is sent again, as a client whose request failed would), the
searches must rank as in the clean run, and, the server stopped, :func:`bench.fault_check.check_folder` checks
the store, catalog and job state. An operation whose target stage never ran is a miss (no kill counted).

The embedder is ``fake:384`` (deterministic, no model to load: restarts are quick and rankings depend only on
the text; BM25 is the real one), so each cycle takes a few seconds; ``RESULT`` counts, over every cycle,
``kills lost duplicated stuck mismatched`` (see :mod:`bench.fault_check`) and ``ties`` (rankings that
differ only in the order of equal scores).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._http import ROOT, free_port, start_server, stop_server
from bench._stats import machine_line, result_line
from bench.fault_aims import Aim, aims_from, kill_when
from bench.fault_check import Expected, Findings, Ranking, compare_rankings, expected_json, ranking
from tests.fixtures.fake_embedders import BACKENDS_ENV

SHARED = ROOT.parent / "shared" / "corpus"
DOCLING, FORMATS = SHARED / "docling" / "pdf", SHARED / "formats"


@dataclass(frozen=True, slots=True)
class Op:
    """One step of the script: uploads (corpus -> files) as concurrent jobs, or one document's deletion."""

    uploads: dict[str, list[Path]] = field(default_factory=dict)
    delete: tuple[str, Path] | None = None

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages this operation runs (the targets a kill during it may aim at)."""
        if self.delete is not None:
            return ("delete", "reweight")
        return ("parse", "embed", "write", "finish_file", "reweight", "optimize")


SCRIPT = [
    Op(uploads={"a": [DOCLING / "multi_page.pdf", DOCLING / "code_and_formula.pdf", FORMATS / "docx/lorem_ipsum.docx"],
                "b": [DOCLING / "2305.03393v1-pg9.pdf", FORMATS / "pptx/powerpoint_sample.pptx"],
                "c": [DOCLING / "table_mislabeled_as_picture.pdf", DOCLING / "right_to_left_01.pdf"]}),
    Op(uploads={"a": [DOCLING / "normal_4pages.pdf"], "b": [FORMATS / "docx/word_tables.docx"]}),
    Op(delete=("a", DOCLING / "code_and_formula.pdf")),
    Op(delete=("b", FORMATS / "pptx/powerpoint_sample.pptx")),
    Op(uploads={"a": [DOCLING / "code_and_formula.pdf"], "c": [DOCLING / "right_to_left_02.pdf"]}),
]
QUERIES = ["table of results", "page number", "lorem ipsum dolor sit amet", "formula code listing",
           "maintenance handbook", "model layout analysis", "chart presentation slide"]
ENV = {**BACKENDS_ENV, "MMRAG_EMBED__TEXT_MODEL": "fake:384", "MMRAG_EMBED__CLIP_MODEL": "",
       "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none", "MMRAG_JOBS__BATCH_PAGES": "2",
       "TOKENIZERS_PARALLELISM": "false"}
JOB_TIMEOUT_S = 180.0


class Server:
    """``python -m bench.fault_probe serve`` on 127.0.0.1 with its own data folder; SIGKILLed or stopped by PID."""

    def __init__(self, data_dir: Path, probe: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.probe = probe
        self.down = False  # SIGKILLed: a restart is due
        probe.write_text("")
        env = {**ENV, **(env or {}), "MMRAG_DATA_DIR": str(data_dir), "MMRAG_FAULT_PROBE": str(probe)}
        t0 = time.monotonic()
        self.proc = start_server([sys.executable, "-m", "bench.fault_probe", "serve", "--port", str(self.port)],
                                 f"{self.url}/health", env=env, log=data_dir.parent / f"{data_dir.name}.log",
                                 timeout_s=180)
        self.start_s = time.monotonic() - t0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.down = True

    def kill_for(self, thread: str) -> None:
        """SIGKILL the process in which ``thread`` (``pid:thread id`` of the probe file) runs: here, the server."""
        self.kill()

    def stop(self) -> None:
        stop_server(self.proc)

    def get(self, path: str) -> Any:
        r = httpx.get(self.url + path, timeout=30)
        r.raise_for_status()
        return r.json()


# the operations ---------------------------------------------------------------------
def send(server: Server, op: Op, jobs: dict[str, str]) -> None:
    """Send the operation (the uploads not in ``jobs`` yet); ``jobs`` gets each upload's job id (corpus -> id)."""
    if op.delete is not None:
        corpus, path = op.delete
        r = httpx.delete(f"{server.url}/corpora/{corpus}/documents/{document_id(path)}", timeout=120)
        if r.status_code not in (204, 404):  # 404: deleted before the kill
            raise RuntimeError(f"delete: {r.status_code} {r.text}")
        return
    for corpus, paths in op.uploads.items():
        if corpus in jobs:
            continue
        files = [("files", (p.name, p.read_bytes())) for p in paths]
        r = httpx.post(f"{server.url}/corpora/{corpus}/documents", files=files, timeout=120)
        if r.status_code != 202:
            raise RuntimeError(f"upload to {corpus}: {r.status_code} {r.text}")
        jobs[corpus] = r.json()["job"]["id"]


def document_id(path: Path) -> str:
    from mmrag.ingest.ids import document_id as doc_id

    return doc_id(path.read_bytes())


def wait_jobs(server: Server, jobs: list[str], out: Findings) -> None:
    """Every job to its end (``done`` with no error expected); one still running after the timeout is stuck."""
    deadline = time.monotonic() + JOB_TIMEOUT_S
    for job in jobs:
        while True:
            state = server.get(f"/jobs/{job}")
            if state["state"] in ("done", "failed", "cancelled"):
                if state["state"] != "done" or state["errors"]:
                    out.mismatched += 1
                    out.notes.append(f"job {job} ended {state['state']}: {state['errors']}")
                break
            if time.monotonic() > deadline:
                out.stuck += 1
                out.notes.append(f"job {job} still {state['state']} after {JOB_TIMEOUT_S:.0f}s")
                break
            time.sleep(0.2)


def snapshot(server: Server) -> tuple[Expected, dict[str, Ranking]]:
    """The documents of every corpus and the ranking of every search."""
    docs: Expected = {}
    ranks: dict[str, Ranking] = {}
    for corpus in ("a", "b", "c"):
        docs[corpus] = {d["id"]: d["page_count"] for d in server.get(f"/corpora/{corpus}/documents")}
        for q in QUERIES:
            r = httpx.post(f"{server.url}/corpora/{corpus}/search", json={"query": q, "top_k": 20}, timeout=60)
            r.raise_for_status()
            ranks[f"{corpus}/{q}"] = ranking(r.json()["results"])
    return docs, ranks


def create_corpora(server: Server) -> None:
    for corpus in ("a", "b", "c"):
        config = {"spaces": ["text", "bm25", "document"]}
        r = httpx.post(f"{server.url}/corpora", json={"name": corpus, "config": config}, timeout=30)
        if r.status_code != 201:
            raise RuntimeError(f"create corpus {corpus}: {r.status_code} {r.text}")


# an episode -------------------------------------------------------------------------
@dataclass(slots=True)
class Tally:
    kills: int = 0
    misses: int = 0
    found: Findings = field(default_factory=Findings)
    hits: Counter[str] = field(default_factory=Counter)  # the target stage, when the kill landed in it
    landed: Counter[str] = field(default_factory=Counter)  # every stage running at a kill
    cycle_s: list[float] = field(default_factory=list)
    restart_dependent: int = 0  # searches the clean run ranks otherwise after a restart


Reference = tuple[Expected, dict[str, Ranking], dict[str, Ranking]]
"""After an operation of the clean run: the documents, the searches' rankings, and the same after a restart."""


MakeServer = Callable[[Path, Path], Server]
"""Starts the deployment's server on a data folder with a probe file (a restart: the same folder)."""


def clean_run(folder: Path, script: list[Op], make: MakeServer = Server) -> list[Reference]:
    """The reference: the script with no kill; the documents and rankings after each operation, and the rankings
    once more after a restart (the engine may rank otherwise after reloading a corpus a deletion changed)."""
    data, probe = folder / "clean", folder / "clean.probe"
    server = make(data, probe)
    try:
        create_corpora(server)
        out = []
        for op in script:
            found = Findings()
            jobs: dict[str, str] = {}
            send(server, op, jobs)
            wait_jobs(server, list(jobs.values()), found)
            docs, ranks = snapshot(server)
            found.add(server_check(server, docs))
            server.stop()
            server = make(data, probe)
            out.append((docs, ranks, snapshot(server)[1]))
            if not found.clean:
                raise RuntimeError(f"the clean run failed: {found.notes}")
    finally:
        server.stop()
    return out


def restart_dependent(reference: list[Reference]) -> int:
    """Searches of the clean run that rank otherwise after a restart (the engine, not a kill)."""
    return sum(compare_rankings(after, ranks).mismatched + compare_rankings(after, ranks).ties
               for _, ranks, after in reference)


def set_target(probe: Path, stage: str) -> None:
    probe.with_suffix(".target").write_text(stage)


def server_check(server: Server, expected: Expected, optional: frozenset[str] = frozenset()) -> Findings:
    """:func:`bench.fault_check.check` run by the server's probe on its own catalog, store and job state."""
    request, result = server.probe.with_suffix(".check"), server.probe.with_suffix(".result")
    result.unlink(missing_ok=True)
    tmp = request.with_suffix(".check-tmp")
    tmp.write_text(expected_json(expected, optional))
    tmp.replace(request)  # atomic: the probe never reads half a request
    deadline = time.monotonic() + 120
    while not result.exists():
        if time.monotonic() > deadline or server.proc.poll() is not None:
            raise RuntimeError("the probe did not answer the check")
        time.sleep(0.05)
    return Findings.from_json(result.read_text())


def episode(folder: Path, script: list[Op], reference: list[Reference],
            aims: Callable[[Op], Aim], tally: Tally, kills: int, log: Callable[[str], None] = print,
            deadline: float = float("inf"), make: MakeServer = Server) -> None:
    """The script on a fresh folder, one kill cycle per operation (until ``kills`` kills are counted)."""
    data = folder / f"episode-{tally.kills + tally.misses}"
    probe = folder / "probe"
    set_target(probe, "")
    server = make(data, probe)
    create_corpora(server)
    try:
        for op, (expected, *rankings) in zip(script, reference, strict=True):
            if tally.kills >= kills or time.monotonic() > deadline:
                return
            server = cycle(server, data, op, aims(op), expected, rankings, tally, log, make)
    finally:
        server.stop()


def cycle(server: Server, data: Path, op: Op, aim: Aim, expected: Expected, rankings: list[dict[str, Ranking]],
          tally: Tally, log: Callable[[str], None], make: MakeServer = Server) -> Server:
    """One operation with a kill in ``aim``'s stage, the restart, the jobs to their end and the checks (the
    searches rank as the clean run did, before or after its restart); returns the server now running."""
    t0 = time.monotonic()
    server.probe.write_text("")  # this cycle's events only
    set_target(server.probe, aim.stage)
    done = threading.Event()
    jobs: dict[str, str] = {}

    def run_op() -> None:
        try:
            send(server, op, jobs)
            for job in jobs.values():  # the operation ends with its jobs
                while server.get(f"/jobs/{job}")["state"] in ("queued", "running"):
                    time.sleep(0.1)
        except (httpx.HTTPError, RuntimeError):
            pass  # killed mid-request: sent again after the restart, as a client would
        finally:
            done.set()

    sender = threading.Thread(target=run_op)
    sender.start()
    hit = kill_when(server, aim, done)
    sender.join()
    set_target(server.probe, "")
    found = Findings()
    if hit is None:
        tally.misses += 1
    else:
        tally.kills += 1
        stages = hit.split("+")
        tally.landed.update(stages)
        if aim.stage in stages:
            tally.hits[aim.stage] += 1
        if server.down:  # a worker killed on the distributed path leaves the server up
            server = make(data, server.probe)
        if op.delete is not None:  # before the client sends it again: listed complete, or not listed
            found.add(server_check(server, expected, frozenset({document_id(op.delete[1])})))
    send(server, op, jobs)  # a deletion again, the uploads whose answer the kill cut off
    unfinished = [j["id"] for c in op.uploads for j in server.get(f"/corpora/{c}/jobs")
                  if j["state"] in ("queued", "running")]  # a job created before the kill cut its answer
    wait_jobs(server, sorted(set(jobs.values()) | set(unfinished)), found)
    got = snapshot(server)[1]
    found.add(min((compare_rankings(got, r) for r in rankings), key=lambda f: (f.mismatched, f.ties)))
    found.add(server_check(server, expected))
    tally.found.add(found)
    tally.cycle_s.append(time.monotonic() - t0)
    log(f"cycle {len(tally.cycle_s)}: aim {aim.stage}/{aim.mode}"
        f"{'/' + str(aim.steps) if aim.mode == 'step' else f'/{aim.delay_s:.2f}s'} -> "
        f"{'no kill (stage not reached)' if hit is None else 'killed in ' + hit}; "
        f"{'ok' if found.clean else 'FOUND ' + '; '.join(found.notes)}"
        f"{' (ties: ' + str(found.ties) + ')' if found.ties else ''}; {tally.cycle_s[-1]:.1f}s "
        f"(start {server.start_s:.1f}s, load {os.getloadavg()[0]:.1f})")
    return server


def run(kills: int, seed: int, folder: Path, script: list[Op] = SCRIPT, log: Callable[[str], None] = print,
        minutes: float | None = None, make: MakeServer = Server, aims: Callable[[Op], Aim] | None = None) -> Tally:
    """The clean run of ``script``, then episodes until ``kills`` kills are counted (or ``minutes`` have passed:
    then fewer kills, as the RESULT line says)."""
    deadline = time.monotonic() + 60 * minutes if minutes else float("inf")
    reference = clean_run(folder, script, make)
    tally = Tally(restart_dependent=restart_dependent(reference))
    aims = aims or aims_from(seed)
    while tally.kills < kills and time.monotonic() < deadline:
        before = tally.kills
        episode(folder, script, reference, aims, tally, kills, log, deadline, make)
        if tally.kills == before and time.monotonic() < deadline:
            raise RuntimeError("an episode without a single kill: the probes do not reach the stages")
    return tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--minutes", type=float, default=None,
                    help="start no cycle after this many minutes (the RESULT then counts the kills done)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--path", choices=["embedded", "celery"], default="embedded",
                    help="embedded: the server runs every stage; celery: Redis + Celery workers + the server as "
                         "the single writer (bench.faults_celery)")
    ap.add_argument("--data-dir", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    args = ap.parse_args()
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="mmrag-faults-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(machine_line())
    t0 = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            make: MakeServer = Server
            if args.path == "celery":
                from bench.faults_celery import celery_deployment

                make = stack.enter_context(celery_deployment(folder))
            tally = run(args.kills, args.seed, folder, minutes=args.minutes, make=make)
    finally:
        if args.data_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    wall = time.monotonic() - t0
    cycles = sorted(tally.cycle_s)
    print(f"path {args.path}; kills per target stage: {dict(sorted(tally.hits.items()))}; stages running at the "
          f"kills: {dict(sorted(tally.landed.items()))}; misses (stage not reached): {tally.misses}")
    print(f"searches of the clean run that rank otherwise after a plain restart: {tally.restart_dependent} "
          f"(a kill's searches count as equal when they match the clean run's before or after its restart)")
    print(f"cycles: {len(cycles)}, median {cycles[len(cycles) // 2]:.1f}s, total {wall:.0f}s")
    print(machine_line())
    print(result_line({"kills": tally.kills, "lost": tally.found.lost, "duplicated": tally.found.duplicated,
                       "stuck": tally.found.stuck, "mismatched": tally.found.mismatched, "ties": tally.found.ties,
                       "restart_dependent": tally.restart_dependent, "seconds": round(wall)}))


if __name__ == "__main__":
    main()
