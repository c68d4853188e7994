"""A day in an hour: mixed traffic against a real ``mmrag serve`` for ``--minutes``, recording the memory of
the server and of every worker, its open file descriptors, search latency over time and every status code.

    python -m bench.soak --minutes 60 --seed 0 --out soak-out

The server runs on 127.0.0.1 (a free port) on its own data folder (``--data-dir``, default a temporary
one) with keys required and no VLM (answers and chats are extractive, so no model weights beyond the
MiniLM text encoder are needed). Each of ``--tenants`` corpora has a write key used by ``--clients``
threads; each thread repeats, with ``--think`` seconds between requests and a seeded choice of action:

* a text search (plain, or filtered by upload metadata, by page range or by kind), most of the traffic;
* an answer (``POST /corpora/{c}/answer``) or a chat completion (``POST /v1/chat/completions``);
* an upload of one shared file (small PDFs of ../shared/corpus/docling, office, markdown and HTML files of
  ../shared/corpus/formats) not in the corpus now, when the tenant's previous upload job has finished;
* a delete of one of the corpus's documents (so that the same files come back later: the corpus stays
  bounded and the ingest path keeps working).

An admin key runs the ``docling`` suite's ``quick`` variant over REST every ``--eval-every`` seconds (one
at a time). The run stops after ``--minutes`` or ``--max-requests``, whichever first.

Every ``--every`` seconds the RSS of the server and of each process below it and the server's open file
descriptors are sampled (:mod:`bench._soak_series`, which also defines the figures). Written to ``--out``:
``soak.csv`` (a row per sample: RSS, fds, search p50/p99 and the status counts since the previous one),
``soak.json``, ``soak.png`` (RSS and p99 over time), ``maps.json`` (the server's RSS by mapping every five
minutes: which files, heaps or arenas grew) and ``server.log``. Ends with
``RESULT minutes=… errors_5xx=… rss_growth=… rss_growth_lo=… rss_growth_hi=… p99_ratio=… p99_ratio_hi=…``.
Targets (issue 42): 0 5xx, ``rss_growth_hi`` ≤ 0.05, ``p99_ratio_hi`` ≤ 1.2, on a machine not loaded.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._http import ROOT, free_port, start_server, stop_server
from bench._load_docs import QUERIES
from bench._soak_series import (
    Busy,
    Request,
    Series,
    mapped_rss_kb,
    sample,
    slow_overlap,
    status_counts,
    summarise,
    windows,
    write,
)
from bench._stats import machine_line, result_line, verdict
from mmrag.keys import KeyStore

SHARED = ROOT.parent / "shared" / "corpus"
FILES = ["docling/pdf/2305.03393v1-pg9.pdf", "docling/pdf/code_and_formula.pdf", "docling/pdf/multi_page.pdf",
         "docling/pdf/right_to_left_01.pdf", "docling/pdf/table_mislabeled_as_picture.pdf",
         "formats/docx/lorem_ipsum.docx", "formats/docx/word_tables.docx", "formats/pptx/powerpoint_sample.pptx",
         "formats/xlsx/xlsx_01.xlsx", "formats/md/duck.md", "formats/html/table_06.html"]
SERVER_ENV = {"MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none",
              "MMRAG_API__AUTH": "required", "MMRAG_API__RATE_PER_KEY": "0"}
ACTIONS = {"search": 14, "answer": 2, "chat": 2, "upload": 2, "delete": 1}  # relative weights
EVAL = {"suite": "docling", "variant": "quick"}
WORDS = ["duck", "table", "formula", "code", "page", "lorem", "ipsum", "sales", "layout", "model"]


@dataclass(slots=True)
class Tenant:
    """One corpus and its write key; what it holds now (file name -> document id) and its last upload job."""

    corpus: str
    key: str
    held: dict[str, str] = field(default_factory=dict)
    job: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(slots=True)
class Traffic:
    """The clients' shared state: every request, the stop signal, the request budget."""

    url: str
    start: float
    series: Series
    stop: threading.Event
    max_requests: int
    files: dict[str, bytes]
    lock: threading.Lock = field(default_factory=threading.Lock)
    maps: dict[float, dict[str, int]] = field(default_factory=dict)  # t -> the server's RSS (kB) by mapping
    wall_start: float = field(default_factory=time.time)  # start on the wall clock (made with ``start``)
    jobs: list[str] = field(default_factory=list)  # every ingest job the clients started

    def send(self, http: httpx.Client, route: str, method: str, path: str, **kwargs: object) -> httpx.Response | None:
        """One request, recorded (status 0 when no answer came); None after a transport error."""
        t0 = time.monotonic()
        try:
            response: httpx.Response | None = http.request(method, path, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError:
            response = None
        done = time.monotonic()
        stages = None
        if route == "search" and response is not None and response.status_code == 200:
            stages = {k: round(v, 5) for k, v in response.json().get("timings", {}).items()}
        with self.lock:
            self.series.requests.append(Request(round(t0 - self.start, 3), route,
                                                response.status_code if response is not None else 0, done - t0,
                                                stages))
            if len(self.series.requests) >= self.max_requests:
                self.stop.set()
        return response


def _search_body(rng: random.Random) -> dict[str, object]:
    body: dict[str, object] = {"query": f"{rng.choice(QUERIES)} {rng.choice(WORDS)}", "top_k": 5}
    kind = rng.randrange(4)
    if kind == 1:
        body["metadata"] = {"soak": rng.choice(["pdf", "office", "text"])}
    elif kind == 2:
        body["pages"] = {"first": 1, "last": 2}
    elif kind == 3:
        body["kinds"] = ["page"]
    return body


def _family(name: str) -> str:
    return "pdf" if name.endswith(".pdf") else "text" if name.endswith((".md", ".html")) else "office"


def _upload_or_delete(traffic: Traffic, http: httpx.Client, tenant: Tenant, action: str, rng: random.Random) -> None:
    with tenant.lock:  # one client of the tenant at a time changes what it holds
        if tenant.job is not None:
            r = traffic.send(http, "job", "GET", f"/jobs/{tenant.job}")
            if r is None or r.status_code != 200 or r.json()["state"] in ("queued", "running"):
                return
            docs = traffic.send(http, "documents", "GET", f"/corpora/{tenant.corpus}/documents")
            if docs is not None and docs.status_code == 200:
                tenant.held = {d["filename"]: d["id"] for d in docs.json()}
            tenant.job = None
        missing = sorted(set(traffic.files) - set(tenant.held))
        if action == "upload" and missing:
            name = rng.choice(missing)
            r = traffic.send(http, "upload", "POST", f"/corpora/{tenant.corpus}/documents",
                             files=[("files", (name, traffic.files[name]))],
                             data={"metadata": f'{{"soak": "{_family(name)}"}}'})
            if r is not None and r.status_code == 202 and r.json().get("job"):
                tenant.job = r.json()["job"]["id"] if isinstance(r.json()["job"], dict) else r.json()["job"]
                traffic.jobs.append(tenant.job)
        elif action == "delete" and tenant.held:
            name = rng.choice(sorted(tenant.held))
            r = traffic.send(http, "delete", "DELETE", f"/corpora/{tenant.corpus}/documents/{tenant.held[name]}")
            if r is not None and r.status_code in (200, 204, 404):
                del tenant.held[name]


def client(traffic: Traffic, tenant: Tenant, seed: int, think_s: float) -> None:
    """One client of ``tenant``: seeded actions until the run stops."""
    rng = random.Random(seed)
    actions, weights = list(ACTIONS), list(ACTIONS.values())
    with httpx.Client(base_url=traffic.url, timeout=300, headers={"Authorization": f"Bearer {tenant.key}"}) as http:
        while not traffic.stop.is_set():
            action = rng.choices(actions, weights)[0]
            question = f"What does the document say about {rng.choice(WORDS)}?"
            if action == "search":
                traffic.send(http, "search", "POST", f"/corpora/{tenant.corpus}/search", json=_search_body(rng))
            elif action == "answer":
                traffic.send(http, "answer", "POST", f"/corpora/{tenant.corpus}/answer",
                             json={"question": question, "stream": False})
            elif action == "chat":
                traffic.send(http, "chat", "POST", "/v1/chat/completions",
                             json={"model": tenant.corpus, "messages": [{"role": "user", "content": question}],
                                   "stream": rng.random() < 0.5})
            else:
                _upload_or_delete(traffic, http, tenant, action, rng)
            traffic.stop.wait(think_s * rng.uniform(0.5, 1.5))


def evaluator(traffic: Traffic, admin: str, every_s: float) -> None:
    """The ``docling`` suite's quick variant over REST, one at a time, every ``every_s`` seconds."""
    with httpx.Client(base_url=traffic.url, timeout=300, headers={"Authorization": f"Bearer {admin}"}) as http:
        while not traffic.stop.wait(every_s):
            r = traffic.send(http, "evaluation", "POST", "/evaluations", json=EVAL)
            if r is None or r.status_code != 202:
                continue
            job, began = r.json()["id"], time.monotonic() - traffic.start
            while not traffic.stop.wait(2.0):
                r = traffic.send(http, "evaluation_poll", "GET", f"/evaluations/{job}")
                if r is None or r.status_code != 200 or r.json()["state"] in ("done", "failed"):
                    break
            traffic.series.busy.append(Busy("evaluation", round(began, 3), round(time.monotonic() - traffic.start, 3)))


def ingest_spans(traffic: Traffic, admin: str) -> list[Busy]:
    """The clients' ingest jobs as spans of the run (from the server's own created/finished times)."""
    spans = []
    with httpx.Client(base_url=traffic.url, timeout=60, headers={"Authorization": f"Bearer {admin}"}) as http:
        for job in traffic.jobs:
            r = http.get(f"/jobs/{job}")
            if r.status_code == 200 and (body := r.json()).get("finished_at"):
                spans.append(Busy("ingest", round(body["created_at"] - traffic.wall_start, 3),
                                  round(body["finished_at"] - traffic.wall_start, 3), body.get("timings", {})))
    return spans


MAPS_EVERY_S = 300.0


def sampler(traffic: Traffic, pid: int, every_s: float) -> None:
    """A sample every ``every_s``; the server's memory by mapping every five minutes (``maps.json``)."""
    next_maps = 0.0
    while True:
        t = time.monotonic() - traffic.start
        traffic.series.samples.append(sample(pid, t))
        if t >= next_maps:
            traffic.maps[round(t, 1)] = mapped_rss_kb(pid)
            next_maps += MAPS_EVERY_S
        if traffic.stop.wait(every_s):
            return


def grew_most(maps: dict[float, dict[str, int]], since: float, n: int = 8) -> list[tuple[str, int]]:
    """The ``n`` mappings whose RSS (kB) grew most from the snapshot nearest ``since`` to the last one."""
    first = maps[min(maps, key=lambda t: abs(t - since))]
    last = maps[max(maps)]
    growth = {k: last.get(k, 0) - first.get(k, 0) for k in first.keys() | last.keys()}
    return sorted(growth.items(), key=lambda kv: -kv[1])[:n]


def _keys(data: Path, corpora: list[str]) -> tuple[str, list[Tenant]]:
    keys = KeyStore(data)
    try:
        admin = keys.create("admin", name="soak-admin").secret
        tenants = [Tenant(c, keys.create("write", c, name=f"soak-{c}").secret) for c in corpora]
    finally:
        keys.close()
    return admin, tenants


def _seed(url: str, admin: str, tenants: list[Tenant], files: dict[str, bytes]) -> None:
    """Each corpus with two PDFs, indexed before the clock starts."""
    from mmrag.rest_client import Client

    with Client(url, api_key=admin) as rest:
        for i, tenant in enumerate(tenants):
            rest.create_corpus(tenant.corpus)
            names = [n for n in files if n.endswith(".pdf")][i % 2::2][:2]
            rest.upload(tenant.corpus, [(n, files[n]) for n in names], {"soak": "pdf"}, wait=True)
            tenant.held = {d["filename"]: d["id"] for d in rest.documents(tenant.corpus)}


def _print(line: str) -> None:
    print(line, flush=True)


def run(minutes: float, *, seed: int = 0, data_dir: Path | None = None, out: Path, tenants: int = 3,
        clients: int = 2, think_s: float = 0.5, every_s: float = 10.0, eval_every_s: float = 300.0,
        max_requests: int = 1_000_000, log: Callable[[str], None] = _print) -> tuple[Series, float]:
    """Start the server, drive the traffic, stop; the series and the run's length in seconds."""
    files = {Path(f).name: (SHARED / f).read_bytes() for f in FILES}
    tmp = None if data_dir is not None else Path(tempfile.mkdtemp(prefix="mmrag-soak-"))
    data = data_dir if data_dir is not None else tmp / "data"  # type: ignore[operator]
    out.mkdir(parents=True, exist_ok=True)
    admin, tenant_list = _keys(data, [f"soak-{i}" for i in range(tenants)])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server([sys.executable, "-m", "cli", "serve", "--port", str(port)], f"{url}/health/ready",
                        env={**SERVER_ENV, "MMRAG_DATA_DIR": str(data)}, log=out / "server.log")
    try:
        _seed(url, admin, tenant_list, files)
        log(f"server pid {proc.pid} on {url}; {tenants} corpora seeded; {machine_line()}")
        traffic = Traffic(url, time.monotonic(), Series(), threading.Event(), max_requests, files)
        threads = [threading.Thread(target=sampler, args=(traffic, proc.pid, every_s), daemon=True),
                   threading.Thread(target=evaluator, args=(traffic, admin, eval_every_s), daemon=True)]
        threads += [threading.Thread(target=client, args=(traffic, t, seed * 1000 + i * 10 + c, think_s), daemon=True)
                    for i, t in enumerate(tenant_list) for c in range(clients)]
        for thread in threads:
            thread.start()
        deadline = traffic.start + minutes * 60
        while not traffic.stop.wait(min(60.0, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            s = traffic.series.samples[-1]
            log(f"{(time.monotonic() - traffic.start) / 60:5.1f} min: {len(traffic.series.requests)} requests, "
                f"RSS {s.server_rss_mb:.0f} + {sum(s.children_rss_mb.values()):.0f} MB "
                f"({len(s.children_rss_mb)} children), {s.fds} fds, load {machine_line().split('average ')[1]}")
        traffic.stop.set()
        duration = time.monotonic() - traffic.start
        for thread in threads:
            thread.join(timeout=330)
        traffic.series.samples.append(sample(proc.pid, duration))  # the end of the last window
        traffic.maps[round(duration, 1)] = mapped_rss_kb(proc.pid)
        traffic.series.busy += ingest_spans(traffic, admin)
        (out / "maps.json").write_text(json.dumps({str(t): m for t, m in traffic.maps.items()}))
        since = windows(duration).first[1]
        log("server RSS grown most since the first window: "
            + ", ".join(f"{name} {kb / 1024:+.1f} MB" for name, kb in grew_most(traffic.maps, since)))
    finally:
        stop_server(proc)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return traffic.series, duration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=None, help="the server's data folder (default: a new "
                        "temporary one, removed at the end)")
    parser.add_argument("--out", type=Path, default=Path("soak-out"), help="folder for the series, plot and log")
    parser.add_argument("--tenants", type=int, default=3, help="corpora, one write key each")
    parser.add_argument("--clients", type=int, default=2, help="client threads per key")
    parser.add_argument("--think", type=float, default=0.5, help="mean seconds between a client's requests")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples of the process tree")
    parser.add_argument("--eval-every", type=float, default=300.0, help="seconds between evaluation runs")
    parser.add_argument("--max-requests", type=int, default=1_000_000)
    args = parser.parse_args()
    series, duration = run(args.minutes, seed=args.seed, data_dir=args.data_dir, out=args.out,
                           tenants=args.tenants, clients=args.clients, think_s=args.think, every_s=args.every,
                           eval_every_s=args.eval_every, max_requests=args.max_requests)
    paths = write(series, duration, args.out)
    values = summarise(series, duration)
    print("statuses: " + ", ".join(f"{k}: {n}" for k, n in sorted(status_counts(series.requests).items())))
    print(f"written: {', '.join(str(p) for p in paths)}")
    overlap = slow_overlap(series.requests, series.busy)
    if overlap is not None:
        print(f"slowest 1 %: over {overlap.cut_s * 1000:.1f} ms ({overlap.slow} searches)")
        for kind, (every, slowest) in overlap.shares.items():
            print(f"searches during {kind}: {every:.3f} of all, {slowest:.3f} of the slowest 1 %")
    print(machine_line())
    print(verdict("rss_growth", values["rss_growth"], 0.05, at_least=False))  # type: ignore[arg-type]
    print(verdict("p99_ratio", values["p99_ratio"], 1.2, at_least=False))  # type: ignore[arg-type]
    print(result_line(values))


if __name__ == "__main__":
    main()
