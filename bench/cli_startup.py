"""CLI start-up: `mmrag search` in-process on a small corpus, no environment variables set, against the same
with ``HF_HUB_OFFLINE=1``. Targets (issue 39): the in-process search <= 5 s (``offline_s``) and no slower
without the offline flag (``ratio`` = hub / offline <= 1.1); it was 15.5 s.

    .venv/bin/python -m bench.cli_startup [--rounds 5] [--with-server]

Setup: a temp data folder; one shared PDF ingested with the default settings (``mmrag ingest``).
Arms, alternated ABBA over the rounds, each one fresh ``mmrag search "<query>" --corpus x --json``
process timed by wall clock: ``hub`` (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE removed from the
environment) and ``offline`` (HF_HUB_OFFLINE=1). ``--with-server`` adds, while ``mmrag serve`` runs
on the folder, two more arms alternated ABBA with each other: ``rest`` (the same command: the CLI
then searches over REST) and ``bare`` (a fresh ``python -c`` that only imports httpx and posts the
same search), so ``cli_s / bare_s`` is what the CLI adds over the request itself.
Ends with ``RESULT hub_s=… offline_s=… ratio=… (_lo/_hi)`` (``cli_s bare_s cli_over_bare`` with
``--with-server``) and the verdicts on offline_s <= 5 and ratio <= 1.1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench._http import free_port
from bench._stats import alternate, machine_line, result_line, verdict
from mmrag.evaluate.stats import interval, paired_ratios

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MMRAG_TEST_CORPUS", ROOT.parent / "shared" / "corpus" / "docling"))
QUERY = "table structure recognition"
TARGET_S = 5.0  # an in-process search, start to finish
TARGET_RATIO = 1.1  # without the offline flag over with it


def base_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
           and not k.startswith("MMRAG_")}
    return {**env, "MMRAG_DATA_DIR": str(data_dir)}


def mmrag(env: dict[str, str], *args: str) -> float:
    """Wall seconds of one CLI run (it must succeed)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"mmrag {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def bare(env: dict[str, str], port: int) -> float:
    """Wall seconds of a fresh interpreter that imports httpx and posts the CLI's search (must succeed)."""
    from mmrag.rest_client import search_body
    from mmrag.types import SearchRequest

    body = json.dumps(search_body(SearchRequest(query=QUERY)))  # the body the CLI sends
    code = (f"import httpx; r = httpx.post('http://127.0.0.1:{port}/corpora/x/search', "
            f"content={body!r}, headers={{'content-type': 'application/json'}}, timeout=120); r.raise_for_status()")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"bare search failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--port", str(port)], cwd=ROOT,
                            env={**env, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("mmrag serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--with-server", action="store_true", help="also time the CLI over REST")
    args = parser.parse_args()
    print(machine_line(), flush=True)
    pdf = sorted((CORPUS / "pdf").glob("*.pdf"))[0]
    with tempfile.TemporaryDirectory(prefix="mmrag-cli-") as tmp:
        env = base_env(Path(tmp) / "data")
        print(f"setup: ingest {pdf.name}: {mmrag(env, 'ingest', str(pdf), '--corpus', 'x'):.1f} s")
        search = ("search", QUERY, "--corpus", "x", "--json")
        arms = {"hub": lambda r: mmrag(env, *search),
                "offline": lambda r: mmrag({**env, "HF_HUB_OFFLINE": "1"}, *search)}
        values = alternate(arms, args.rounds)
        results = {"hub_s": interval(values["hub"]), "offline_s": interval(values["offline"]),
                   "ratio": interval(paired_ratios(values["hub"], values["offline"]))}
        if args.with_server:
            port = free_port()
            server = start_server(env, port)
            try:
                mmrag(env, *search)  # the server's first search loads its models: not timed
                rest = alternate({"rest": lambda r: mmrag(env, *search), "bare": lambda r: bare(env, port)},
                                 args.rounds)
            finally:
                server.terminate()
                server.wait(timeout=60)
            results["cli_s"], results["bare_s"] = interval(rest["rest"]), interval(rest["bare"])
            results["cli_over_bare"] = interval(paired_ratios(rest["rest"], rest["bare"]))
    print(machine_line())
    print(verdict("offline_s", results["offline_s"], TARGET_S, at_least=False))
    print(verdict("ratio", results["ratio"], TARGET_RATIO, at_least=False))
    print(result_line(results))


if __name__ == "__main__":
    main()
