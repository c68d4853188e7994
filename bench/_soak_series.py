"""What the soak (bench/soak.py) records and how it sums it up: every request (time, route, status,
latency), a sample every few seconds of the server's process tree (RSS of the server and of each child:
parse workers, converter, embedding workers) and of its open file descriptors, and the RESULT figures.

The figures, one function each so that a test can feed them synthetic series (tests/bench/test_soak.py):

* the run's first 10 % is warm-up; a *window* is ``min(10 minutes, a sixth of the run)``;
* growth of a memory figure: its median in the last window ÷ its median in the first window after
  warm-up − 1, with a bootstrap interval that resamples the two windows' samples; for
  ``server_rss_growth`` the figure is the server's RSS, for ``worker_rss_growth`` a worker's RSS (the median
  over the sample's worker processes: the Python children, i.e. the parse workers; a converter or OCR
  process is another program), and **``rss_growth`` is the larger of the two** (by its upper bound): does
  any process grow. ``tree_pss_growth`` is the growth of the whole tree's PSS (proportional set size: RSS
  with each shared page divided among the processes sharing it), printed for reference: it moves with how
  many parse workers and converters happen to be running at each sample (2 idle, up to 10 during an
  upload), so a window's median says as much about the traffic of that window as about growth;
* ``p99_ratio``: p99 of search latency in the last window ÷ p99 in the first window after warm-up,
  bootstrapped over the two windows' requests (:func:`mmrag.evaluate.stats.ratio_interval`);
* ``errors_5xx``: every answer with a status of 500 or more (a transport error, no answer at all, is
  counted apart as ``errors_transport``).
"""

from __future__ import annotations

import bisect
import csv
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mmrag.evaluate.stats import Estimate, median_stat, percentile_stat, ratio_interval

WARMUP_SHARE = 0.10
MAX_WINDOW_S = 600.0


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the client saw it; ``status`` 0: no answer (connection error, timeout)."""

    t: float  # seconds since the start of the run, when it was sent
    route: str  # search | answer | chat | upload | delete | evaluation | ...
    status: int
    latency_s: float
    stages: dict[str, float] | None = None  # a search's own timings as the server reported them (plan, query, ...)


@dataclass(frozen=True, slots=True)
class Sample:
    """The server's process tree at one moment."""

    t: float  # seconds since the start of the run
    server_rss_mb: float
    children_rss_mb: dict[str, float]  # "pid:name" -> MB
    fds: int  # open file descriptors of the server process
    tree_pss_mb: float = 0.0  # PSS of the server and its children together (shared pages counted once)
    server_anon_mb: float = 0.0  # the server's RSS in anonymous memory (heaps: Python's, malloc's, the engine's)
    server_file_mb: float = 0.0  # ... in mapped files (the store's segment files, shared libraries)
    server_threads: int = 0

    @property
    def total_rss_mb(self) -> float:
        return self.server_rss_mb + sum(self.children_rss_mb.values())


@dataclass(frozen=True, slots=True)
class Busy:
    """A span of background work the server did during the run: an ingest job or an evaluation."""

    kind: str  # ingest | evaluation
    start: float  # seconds since the start of the run
    end: float
    timings: dict[str, float] = field(default_factory=dict)  # an ingest job's seconds per stage


@dataclass(slots=True)
class Series:
    requests: list[Request] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    busy: list[Busy] = field(default_factory=list)


# ---- the process tree (Linux /proc) -------------------------------------------------------------------------


def _status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren...), from the parent ids in /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_status(int(entry)).get("PPid", "0"))
        except (OSError, ValueError):
            continue  # the process ended while we looked
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kb_mb(status: dict[str, str], key: str) -> float:
    return int(status.get(key, "0 kB").split()[0]) / 1024  # a zombie has no VmRSS: 0


def _rss_mb(pid: int) -> float:
    return _kb_mb(_status(pid), "VmRSS")


def mapped_rss_kb(pid: int) -> dict[str, int]:
    """The process's resident memory by mapping (from /proc/PID/smaps): a file's path, ``[heap]``,
    ``[anon <size> MB]`` for anonymous mappings grouped by their size (malloc arenas are 64 MB), summed; to see
    which kind of memory grew between two moments of a soak."""
    out: dict[str, int] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            name = head[5] if len(head) > 5 else f"[anon {round((end - start) / 2**20)} MB]"
        elif line.startswith("Rss:"):
            out[name] = out.get(name, 0) + int(line.split()[1])
    return out


def _pss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0  # a zombie has no mappings


def sample(pid: int, t: float) -> Sample:
    """RSS of ``pid`` and of each of its descendants now, their PSS together, ``pid``'s open file descriptors."""
    children, pss = {}, _pss_mb(pid)
    for child in descendants(pid):
        try:
            children[f"{child}:{_status(child).get('Name', '?')}"] = _rss_mb(child)
            pss += _pss_mb(child)
        except OSError:
            continue  # it ended while we looked
    status = _status(pid)
    return Sample(t, _kb_mb(status, "VmRSS"), children, len(os.listdir(f"/proc/{pid}/fd")), pss,
                  _kb_mb(status, "RssAnon"), _kb_mb(status, "RssFile") + _kb_mb(status, "RssShmem"),
                  int(status.get("Threads", "0")))


# ---- the figures ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Windows:
    """Where the warm-up ends and the two compared windows lie, in seconds since the start."""

    warm_end: float
    first: tuple[float, float]
    last: tuple[float, float]


def windows(duration_s: float) -> Windows:
    """Warm-up: the first 10 %; window: ``min(10 min, duration / 6)`` (a 60-minute run: minutes 6-16 and
    50-60)."""
    if duration_s <= 0:
        raise ValueError("the run has no duration")
    warm = WARMUP_SHARE * duration_s
    width = min(MAX_WINDOW_S, duration_s / 6)
    return Windows(warm, (warm, warm + width), (duration_s - width, duration_s))


def _inside(t: float, span: tuple[float, float]) -> bool:
    return span[0] <= t < span[1] or (t == span[1] and span[1] > span[0])


def worker_rss_mb(s: Sample) -> float | None:
    """The median RSS of the sample's worker processes (its Python children); None when it has none."""
    workers = [mb for name, mb in s.children_rss_mb.items() if name.split(":", 1)[1].startswith("python")]
    return float(np.median(workers)) if workers else None


def rss_growth(samples: list[Sample], duration_s: float, *, which: str = "total") -> Estimate:
    """Memory (``total``: PSS of the server and its children; ``server``: the server's RSS; ``workers``: a
    worker's RSS, :func:`worker_rss_mb`) of the last window ÷ the first window after warm-up − 1 (medians,
    bootstrap over each window's samples)."""
    w = windows(duration_s)
    value = {"total": lambda s: s.tree_pss_mb, "server": lambda s: s.server_rss_mb, "workers": worker_rss_mb}[which]
    first = [v for s in samples if _inside(s.t, w.first) and (v := value(s)) is not None]
    last = [v for s in samples if _inside(s.t, w.last) and (v := value(s)) is not None]
    ratio = ratio_interval(last, first, median_stat)
    return Estimate(ratio.value - 1, ratio.lo - 1, ratio.hi - 1, ratio.n)


def p99_ratio(requests: list[Request], duration_s: float, route: str = "search") -> Estimate:
    """p99 latency of ``route``'s successful requests sent in the last window ÷ in the first after warm-up."""
    w = windows(duration_s)
    ok = [r for r in requests if r.route == route and 200 <= r.status < 300]
    first = [r.latency_s for r in ok if _inside(r.t, w.first)]
    last = [r.latency_s for r in ok if _inside(r.t, w.last)]
    return ratio_interval(last, first, percentile_stat(99))


@dataclass(frozen=True, slots=True)
class SlowOverlap:
    """Where the slowest requests of a route fell (:func:`slow_overlap`)."""

    cut_s: float  # the run's q-th percentile of the route's latency: the slow ones are over it
    slow: int  # how many were
    shares: dict[str, tuple[float, float]]  # kind of work -> (share of all the route's requests sent while one
    #                                         ran, share of the slow ones); "any": any kind


def _union(spans: list[Busy]) -> tuple[list[float], list[float]]:
    """The spans' union as disjoint intervals in time order: (starts, ends)."""
    starts: list[float] = []
    ends: list[float] = []
    for b in sorted(spans, key=lambda b: b.start):
        if ends and b.start <= ends[-1]:
            ends[-1] = max(ends[-1], b.end)
        else:
            starts.append(b.start)
            ends.append(b.end)
    return starts, ends


def _meets(union: tuple[list[float], list[float]], a: float, b: float) -> bool:
    """Whether ``[a, b]`` meets the union: the last interval starting by ``b`` reaches ``a`` (any earlier one
    ends before it starts)."""
    starts, ends = union
    i = bisect.bisect_right(starts, b) - 1
    return i >= 0 and ends[i] >= a


def slow_overlap(requests: list[Request], busy: list[Busy], route: str = "search",
                 q: float = 99.0) -> SlowOverlap | None:
    """Where the slow requests fell: for each kind of background work (and ``any``), the share of all of
    ``route``'s successful requests sent while one ran, and the share of the slow ones (over the run's
    ``q``-th percentile). Slow requests that overlap a kind far more often than requests at large point at
    it as the cause of the tail. None when the route has no successful request."""
    ok = [r for r in requests if r.route == route and 200 <= r.status < 300]
    if not ok:
        return None
    cut = float(np.percentile([r.latency_s for r in ok], q))
    slow = [r for r in ok if r.latency_s > cut]
    shares: dict[str, tuple[float, float]] = {}
    for kind in [*sorted({b.kind for b in busy}), "any"]:
        union = _union([b for b in busy if kind in ("any", b.kind)])

        def share(rs: list[Request], union: tuple[list[float], list[float]] = union) -> float:
            return round(sum(_meets(union, r.t, r.t + r.latency_s) for r in rs) / len(rs), 3) if rs else float("nan")

        shares[kind] = (share(ok), share(slow))
    return SlowOverlap(cut, len(slow), shares)


def status_counts(requests: list[Request]) -> Counter[str]:
    """``route status`` -> count (status 0: no answer)."""
    return Counter(f"{r.route} {r.status}" for r in requests)


def errors_5xx(requests: list[Request]) -> int:
    return sum(r.status >= 500 for r in requests)


def summarise(series: Series, duration_s: float) -> dict[str, Estimate | float | int | str]:
    """The RESULT line's figures (bench/soak.py prints them with bench._stats.result_line)."""
    return {"minutes": round(duration_s / 60, 2), "requests": len(series.requests),
            "errors_5xx": errors_5xx(series.requests),
            "errors_transport": sum(r.status == 0 for r in series.requests),
            "rss_growth": max(server := rss_growth(series.samples, duration_s, which="server"),
                              workers := rss_growth(series.samples, duration_s, which="workers"),
                              key=lambda e: e.hi),
            "server_rss_growth": server, "worker_rss_growth": workers,
            "tree_pss_growth": rss_growth(series.samples, duration_s),
            "p99_ratio": p99_ratio(series.requests, duration_s),
            "fds_first": series.samples[0].fds, "fds_last": series.samples[-1].fds}


# ---- the time series on disk ---------------------------------------------------------------------------------


def window_rows(series: Series) -> list[dict[str, float | int | None]]:
    """One row per sample: RSS (server, children, total), fds, and search p50 / p99 and the status counts of
    the requests sent since the previous sample."""
    rows: list[dict[str, float | int | None]] = []
    start = 0.0
    for s in series.samples:
        sent = [r for r in series.requests if start <= r.t < s.t]
        search = [r.latency_s * 1000 for r in sent if r.route == "search" and 200 <= r.status < 300]
        rows.append({"t_s": round(s.t, 1), "server_rss_mb": round(s.server_rss_mb, 1),
                     "children_rss_mb": round(sum(s.children_rss_mb.values()), 1),
                     "total_rss_mb": round(s.total_rss_mb, 1), "tree_pss_mb": round(s.tree_pss_mb, 1),
                     "server_anon_mb": round(s.server_anon_mb, 1), "server_file_mb": round(s.server_file_mb, 1),
                     "server_threads": s.server_threads,
                     "children": len(s.children_rss_mb), "fds": s.fds,
                     "search_n": len(search),
                     "search_p50_ms": round(float(np.percentile(search, 50)), 1) if search else None,
                     "search_p99_ms": round(float(np.percentile(search, 99)), 1) if search else None,
                     "requests": len(sent), "status_2xx": sum(200 <= r.status < 300 for r in sent),
                     "status_4xx": sum(400 <= r.status < 500 for r in sent),
                     "status_5xx": sum(r.status >= 500 for r in sent), "no_answer": sum(r.status == 0 for r in sent)})
        start = s.t
    return rows


def write(series: Series, duration_s: float, out: Path) -> list[Path]:
    """``soak.csv`` (one row per sample), ``soak.json`` (samples with each child, the status counts, every
    request as ``[t, route, status, latency_s, stages]`` and the spans of background work) and, with matplotlib,
    ``soak.png`` (RSS and search p99 over time) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = window_rows(series)
    paths = [out / "soak.csv", out / "soak.json"]
    with paths[0].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    paths[1].write_text(json.dumps({"duration_s": duration_s, "windows": asdict(windows(duration_s)),
                                    "statuses": dict(status_counts(series.requests)),
                                    "samples": [asdict(s) for s in series.samples],
                                    "busy": [asdict(b) for b in series.busy],
                                    "requests": [[r.t, r.route, r.status, round(r.latency_s, 5), r.stages]
                                                 for r in series.requests]}))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return paths
    t = [float(r["t_s"] or 0) / 60 for r in rows]
    nan = float("nan")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    for key, label in (("tree_pss_mb", "server + workers (PSS)"), ("server_rss_mb", "server (RSS)")):
        top.plot(t, [r[key] for r in rows], label=label)
    top.set_ylabel("memory (MB)")
    top.legend()
    for key, label in (("search_p99_ms", "search p99"), ("search_p50_ms", "search p50")):
        bottom.plot(t, [nan if r[key] is None else r[key] for r in rows], label=label)
    bottom.set_ylabel("latency per window (ms)")
    bottom.set_xlabel("minutes")
    bottom.legend()
    w = windows(duration_s)
    for ax in (top, bottom):
        ax.axvspan(0, w.warm_end / 60, color="0.9")
        ax.axvspan(w.first[0] / 60, w.first[1] / 60, color="tab:green", alpha=0.08)
        ax.axvspan(w.last[0] / 60, w.last[1] / 60, color="tab:red", alpha=0.08)
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=90)
    plt.close(fig)
    return [*paths, out / "soak.png"]
