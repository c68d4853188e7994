"""The text model's padded-token budget per forward (``embed.max_batch_tokens``): speed and held memory.

Every arm embeds the same ``--pages`` page texts of the shared corpora (``bench.embed_precision``'s sample,
each truncated to the model's 256 tokens) with the product's path (``embed_batch``: longest first, forwards
cut by ``max_batch`` and the budget), in the precision this CPU gets (int8 where it runs). Arms: ``off`` (no
budget: forwards of up to 64 texts, the product before the budget) and budgets in padded tokens.

1. **Speed**: per round each arm (ABBA-alternated, each its own model instance) embeds all the texts:
   pages/s, and each arm over ``off`` paired per round.
2. **Memory held**: per arm a fresh process loads the model, embeds the texts twice and reports its RSS
   growth over the loaded model (ONNX Runtime keeps its arena at the largest forward it ran: what stays
   is what a server keeps after such an upload).

    python -m bench.forward_budget [--pages 96] [--rounds 6] [--arms off,4096,2048,1024]

ends with ``RESULT pages_per_s_<arm>=.. speed_<arm>=.. (arm / off) held_mb_<arm>=..``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bench._stats import alternate, interval, machine_line, paired_ratios, result_line
from bench.embed_precision import SPEC, page_texts
from mmrag.embed.base import Embedder, EmbedderOptions, load_embedder

UNBOUNDED = 1 << 30


def budget(arm: str) -> int:
    return UNBOUNDED if arm == "off" else int(arm)


def embedder(arm: str) -> Embedder:
    return load_embedder(SPEC, EmbedderOptions(text_precision="auto", max_batch_tokens=budget(arm)))


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024


def held(arm: str, pages: int) -> float:
    """RSS growth (MB) of a fresh process over its loaded model after embedding the texts twice."""
    out = subprocess.run([sys.executable, "-m", "bench.forward_budget", "--child", arm, "--pages", str(pages)],
                         check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["held_mb"])


def child(arm: str, pages: int) -> None:
    texts = page_texts(pages)
    model = embedder(arm)
    model.embed_batch(["warm"])
    before = rss_mb()
    for _ in range(2):
        model.embed_batch(texts)
    print(json.dumps({"held_mb": rss_mb() - before}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--arms", default="off,4096,2048,1024")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.pages)
        return
    print(machine_line())
    arms = args.arms.split(",")
    texts = page_texts(args.pages)
    models = {arm: embedder(arm) for arm in arms}
    print(f"{len(texts)} page texts; precision {models[arms[0]].precision}, kernels {models[arms[0]].kernels}")
    for model in models.values():
        model.embed_batch(texts[:8])

    def run(arm: str) -> float:
        t0 = time.perf_counter()
        models[arm].embed_batch(texts)
        return len(texts) / (time.perf_counter() - t0)

    speeds = alternate({arm: (lambda _r, a=arm: run(a)) for arm in arms}, args.rounds)
    memory = {arm: held(arm, args.pages) for arm in arms}
    values: dict[str, object] = {}
    for arm in arms:
        values[f"pages_per_s_{arm}"] = interval(speeds[arm])
        if arm != "off" and "off" in speeds:
            values[f"speed_{arm}"] = interval(paired_ratios(speeds[arm], speeds["off"]))
        values[f"held_mb_{arm}"] = round(memory[arm], 1)
    print(machine_line())
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
