"""How long the embedded engine's calls stop every other Python thread of the process (the GIL held).

    python -m bench.engine_stall --rounds 5 --points 2000

A thread that sleeps 1 ms in a loop runs beside each call; its longest wait during the call, divided by the
call's duration, is the call's *stall share*: about 0 when the call releases the GIL (the thread wakes every
millisecond), about 1 when it holds it throughout (no request thread, no event loop runs meanwhile). Each
round builds a fresh collection of ``--points`` pages of 6 × 384-dim multi-vectors (a page's chunks as the
text space stores them, random values) with the product's own store (:class:`mmrag.store.edge.EdgeStore`),
then times, in alternating order:

* ``upsert``: writing the points (one call, as a job's batch write is one call per batch);
* ``optimize``: the first optimise of those points (segment indexes; ``store.optimize`` after every job);
* ``vacuum``: deleting five sevenths of them by a payload filter, then optimising (the rebuild of a segment
  that holds deleted points, what a corpus with deletions goes through);
* ``query``: 50 text queries (the control: a search's engine call).

Ends with ``RESULT <arm>_stall=… <arm>_ms=…`` (medians over rounds, 95 % intervals). No target: the figure
says which calls can stall a server's searches and for how long (docs/jobs.md, "Ingestion yields to queries").
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench._stats import machine_line, result_line
from mmrag.evaluate.stats import interval
from mmrag.store import CollectionSpec, FilterSpec, PointRecord, QueryNode, SpaceSpec
from mmrag.store.edge import EdgeStore

DIM, CHUNKS, GROUPS = 384, 6, 7


class Ticker:
    """A thread sleeping 1 ms at a time; :meth:`longest` is its longest wait since :meth:`reset`."""

    def __init__(self) -> None:
        self._gaps: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            self._gaps.append(now - last)
            last = now

    def reset(self) -> None:
        self._gaps = []

    def longest(self) -> float:
        return max(self._gaps, default=0.0)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def timed(ticker: Ticker, call: Callable[[], object]) -> tuple[float, float]:
    """(seconds the call took, share of them the ticker thread could not run)."""
    ticker.reset()
    t0 = time.perf_counter()
    call()
    seconds = time.perf_counter() - t0
    return seconds, min(1.0, ticker.longest() / seconds) if seconds > 0 else 0.0


def one_round(root: Path, points: int, seed: int, ticker: Ticker, order: list[str]) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    store = EdgeStore(root / f"r{seed}")
    store.create_collection("c", CollectionSpec(spaces=(SpaceSpec("text", "multivector", DIM),),
                                                keyword_indexes=("group",)))
    records = [PointRecord(str(uuid.UUID(int=i + 1)), {"text": rng.normal(size=(CHUNKS, DIM)).astype(np.float32)},
                           {"group": f"g{i % GROUPS}"}) for i in range(points)]
    queries = [QueryNode(limit=10, using="text", vector=rng.normal(size=(1, DIM)).astype(np.float32))
               for _ in range(50)]
    calls: dict[str, Callable[[], object]] = {
        "upsert": lambda: store.upsert("c", records),
        "optimize": lambda: store.optimize("c"),
        "vacuum": lambda: ([store.delete("c", FilterSpec(match={"group": f"g{g}"})) for g in range(1, 6)],
                           store.optimize("c")),
        "query": lambda: [store.query("c", q) for q in queries],
    }
    out = {}
    try:
        for name in order:  # upsert first, then optimize: the others need their points
            out[name] = timed(ticker, calls[name])
    finally:
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--points", type=int, default=2000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mmrag-stall-"))
    ticker = Ticker()
    values: dict[str, list[tuple[float, float]]] = {}
    try:
        for r in range(args.rounds):
            tail = ["query", "vacuum"] if r % 2 == 0 else ["vacuum", "query"]  # alternate what can be
            for name, value in one_round(tmp, args.points, r, ticker, ["upsert", "optimize", *tail]).items():
                values.setdefault(name, []).append(value)
            print(f"round {r + 1}/{args.rounds}: " + " | ".join(
                f"{n} {v[-1][0] * 1000:.0f} ms stall {v[-1][1]:.2f}" for n, v in values.items()), flush=True)
    finally:
        ticker.close()
        shutil.rmtree(tmp, ignore_errors=True)
    result = {}
    for name, vs in values.items():
        result[f"{name}_stall"] = interval([s for _, s in vs])
        result[f"{name}_ms"] = interval([t * 1000 for t, _ in vs])
    print(machine_line())
    print(result_line({**result, "points": args.points}))


if __name__ == "__main__":
    main()
