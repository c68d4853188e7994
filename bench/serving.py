"""Serving load generator for the answer path (in the spirit of SGLang's ``bench_serving --dataset-name
image``): Poisson arrivals of answer requests against a running ``mmrag serve`` (in-process
transformers VLM or the vLLM backend behind it), streamed over SSE.

    python -m bench.serving --url http://127.0.0.1:8000 --setup --image-count 4 --image-resolution page \\
        --input-len 32 --output-len 16 --rate 2 --num-prompts 100

Each request asks ``POST /corpora/{corpus}/answer`` (stream) a question of ``--input-len`` words whose
evidence is ``--image-count`` retrieved pages (``visual_token_budget`` = count x ``--tokens-per-image``;
0 images: a text-only request). ``--setup`` creates the corpus and uploads pages at the chosen
resolution (720p: 1280 x 720, 1080p: 1920 x 1080 crops of rendered pages, PNG; page: the docling PDFs,
rendered by the server at its ingest dpi). ``--text-share F`` makes a fraction F of the prompts
text-only (a mixed load). Reports TTFT (request sent -> first token event), TPOT ((last - first
token) / (tokens - 1)), end-to-end latency (p50/p99 with bootstrap intervals over requests), request
and output-token throughput, and the engine's per-stage timings from each ``done`` event (queue,
decode + preprocess, encoder queue, encoder, prefill, first token), plus the server's /metrics.

``--compare-admission`` (with ``--quick``) starts two ``mmrag serve`` processes on a tiny random
Qwen2.5-VL (``tests/generate/tiny_vlm.py``), one with ``MMRAG_VLM__ADMISSION_POLICY=fcfs`` and one
with ``fair``, same token budget (``--token-budget``, 4,096: one 4-page answer with its text
evidence is ~2,200 tokens), same corpus, and sends both the same seeded mixed schedule (80 % text,
20 % with 4 pages) in ``--rounds`` ABBA-alternated rounds through the real HTTP path: Poisson arrivals
at ``--rate`` (default 2/s here), ``--num-prompts`` per round (``--quick``: 40; full mode: 200, the
same schedule run five times longer). Ends with
``RESULT serving_p99_text_ratio=<fair / fcfs text TTFT p99> _lo _hi serving_throughput_ratio=…``;
the plain mode ends with ``RESULT ttft_p50=… ttft_p99=… tpot_p50=… request_throughput=…
output_throughput=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from bench._http import free_port, start_server, stop_server
from bench._pages import CORPUS, render_pages
from bench._stats import machine_line, result_line, verdict
from mmrag.evaluate.stats import interval, median_stat, paired_ratios, percentile_stat, ratio_interval

RESOLUTIONS = {"720p": (1280, 720), "1080p": (1920, 1080), "page": None}
STAGES = ("queue_s", "preprocess_s", "encoder_queue_s", "encoder_s", "prefill_s", "ttft_s")
WORDS = ["what", "does", "the", "report", "say", "about", "revenue", "growth", "tables", "figures", "pages",
         "results", "methods", "section"]


@dataclass(slots=True)
class Result:
    """One answer request as the client saw it."""

    kind: str  # "text" | "image"
    ttft: float = 0.0  # s, request sent -> first token event
    e2e: float = 0.0  # s, request sent -> done event
    tokens: int = 0  # token events received
    timings: dict[str, float] = field(default_factory=dict)  # the done event's engine timings
    error: str = ""

    @property
    def tpot(self) -> float:
        return (self.e2e - self.ttft) / (self.tokens - 1) if self.tokens > 1 else 0.0


def question(input_len: int, rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, input_len))) + "?"


def setup_corpus(url: str, corpus: str, resolution: str, pages: int) -> None:
    """Create ``corpus`` and upload pages at ``resolution``; waits for the ingestion job."""
    with httpx.Client(base_url=url, timeout=900) as http:
        r = http.post("/corpora", json={"name": corpus})
        if r.status_code not in (201, 409):
            raise RuntimeError(f"create corpus: {r.status_code} {r.text[:300]}")
        size = RESOLUTIONS[resolution]
        if size is None:
            import pymupdf

            files, total = [], 0
            for p in sorted((CORPUS / "pdf").glob("*.pdf")):
                if total >= pages:
                    break
                with pymupdf.open(p) as doc:
                    total += doc.page_count
                files.append(("files", (p.name, p.read_bytes(), "application/pdf")))
        else:
            from PIL import Image

            files = []
            for i, (_, png) in enumerate(render_pages(dpi=200, max_pages=pages, scans=False)):
                with Image.open(io.BytesIO(png)) as im:
                    buf = io.BytesIO()
                    im.convert("RGB").crop((0, 0, *size)).save(buf, "PNG")
                files.append(("files", (f"page{i}-{resolution}.png", buf.getvalue(), "image/png")))
        r = http.post(f"/corpora/{corpus}/documents", params={"wait": "true"}, files=files)
        if r.status_code >= 400:
            raise RuntimeError(f"upload: {r.status_code} {r.text[:300]}")


async def one(http: httpx.AsyncClient, corpus: str, body: dict[str, object], kind: str) -> Result:
    res = Result(kind)
    t0 = time.perf_counter()
    try:
        async with http.stream("POST", f"/corpora/{corpus}/answer", json=body) as r:
            if r.status_code != 200:
                res.error = f"{r.status_code}: {(await r.aread())[:200]!r}"
                return res
            event = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "token":
                    res.tokens += 1
                    if res.tokens == 1:
                        res.ttft = time.perf_counter() - t0
                elif line.startswith("data:") and event == "done":
                    res.e2e = time.perf_counter() - t0
                    res.timings = json.loads(line[5:]).get("timings", {})
                elif line.startswith("data:") and event == "error":
                    res.error = line[5:].strip()[:200]
    except httpx.HTTPError as exc:
        res.error = repr(exc)
    if not res.error and not res.e2e:
        res.error = "stream ended without a done event"
    return res


def schedule(args: argparse.Namespace, seed: int) -> list[tuple[float, dict[str, object], str]]:
    """``(arrival s, request body, kind)`` for every prompt: Poisson at ``--rate`` (inf: all at 0)."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(args.num_prompts):
        t += rng.expovariate(args.rate) if args.rate != float("inf") else 0.0
        images = 0 if rng.random() < args.text_share else args.image_count
        body = {"question": question(args.input_len, rng), "top_k": max(1, images),
                "visual_token_budget": images * args.tokens_per_image, "max_new_tokens": args.output_len,
                "stream": True}
        out.append((t, body, "image" if images else "text"))
    return out


Plan = list[tuple[float, dict[str, object], str]]


async def run_load(url: str, corpus: str, plan: Plan) -> tuple[list[Result], float]:
    """Send ``plan`` open-loop; ``(results, seconds from the first send to the last done)``."""
    limits = httpx.Limits(max_connections=len(plan), max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=900, limits=limits) as http:
        start = time.perf_counter()

        async def fire(at: float, body: dict[str, object], kind: str) -> Result:
            await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
            return await one(http, corpus, body, kind)

        results = await asyncio.gather(*(fire(*p) for p in plan))
        return list(results), time.perf_counter() - start


def report(results: list[Result], seconds: float) -> dict[str, object]:
    ok = [r for r in results if not r.error]
    errors = [r.error for r in results if r.error]
    if not ok:
        raise RuntimeError(f"every request failed, e.g. {errors[:3]}")
    values: dict[str, object] = {}
    print(f"{len(ok)}/{len(results)} requests ok in {seconds:.1f}s" + (f"; errors e.g. {errors[:2]}" if errors else ""))
    for name, xs in (("ttft", [r.ttft for r in ok]), ("tpot", [r.tpot for r in ok if r.tokens > 1]),
                     ("e2e", [r.e2e for r in ok])):
        if not xs:
            continue
        p50, p99 = interval(xs, median_stat), interval(xs, percentile_stat(99))
        print(f"  {name:<5} p50 {1000 * p50.value:8.1f} ms [{1000 * p50.lo:.1f}, {1000 * p50.hi:.1f}]  "
              f"p99 {1000 * p99.value:8.1f} ms [{1000 * p99.lo:.1f}, {1000 * p99.hi:.1f}]")
        values[f"{name}_p50"], values[f"{name}_p99"] = p50, p99
    tokens = sum(r.timings.get("new_tokens", r.tokens) for r in ok)
    values["request_throughput"] = len(ok) / seconds
    values["output_throughput"] = tokens / seconds
    print(f"  throughput {len(ok) / seconds:.2f} req/s, {tokens / seconds:.1f} output tokens/s")
    print("  engine stages (done event), ms:  " + "  ".join(
        f"{s[:-2]} p50 {1000 * float(np.percentile([r.timings.get(s, 0.0) for r in ok], 50)):.1f} / "
        f"p99 {1000 * float(np.percentile([r.timings.get(s, 0.0) for r in ok], 99)):.1f}" for s in STAGES))
    return values


def plain(args: argparse.Namespace) -> None:
    if args.setup:
        setup_corpus(args.url, args.corpus, args.image_resolution, max(4, args.image_count * 2))
    results, seconds = asyncio.run(run_load(args.url, args.corpus, schedule(args, args.seed)))
    values = report(results, seconds)
    metrics = httpx.get(f"{args.url}/metrics", timeout=30).json().get("vlm")
    print(f"server /metrics vlm: {metrics}")
    print(machine_line())
    print(result_line(values))  # type: ignore[arg-type]


def serve_env(data: Path, model: Path, policy: str, budget: int, port: int, device: str) -> dict[str, str]:
    return {"MMRAG_DATA_DIR": str(data), "MMRAG_API__HOST": "127.0.0.1", "MMRAG_API__PORT": str(port),
            "MMRAG_VLM__MODEL": str(model), "MMRAG_VLM__DEVICE": device, "MMRAG_VLM__DTYPE": "float32",
            "MMRAG_VLM__TOKEN_BUDGET": str(budget), "MMRAG_VLM__ADMISSION_POLICY": policy,
            "MMRAG_VLM__ENCODER_CACHE_BYTES": "0", "MMRAG_VLM__MAX_NEW_TOKENS": "16",
            "MMRAG_VLM__MAX_QUEUE_REQUESTS": "10000", "MMRAG_VLM__QUEUE_TIMEOUT_S": "600",
            "MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_INGEST__DPI": "200"}


def compare_admission(args: argparse.Namespace) -> None:
    """fcfs vs fair ``mmrag serve`` on the same seeded mixed schedules, ABBA-alternated rounds."""
    from tests.generate.tiny_vlm import save_tiny_qwen25vl

    results: dict[str, list[list[Result]]] = {"fcfs": [], "fair": []}
    spans: dict[str, list[float]] = {"fcfs": [], "fair": []}
    with tempfile.TemporaryDirectory(prefix="mmrag-serving-") as tmp:
        root = Path(tmp)
        model = save_tiny_qwen25vl(root / "tiny-vlm")
        servers: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
        try:
            for policy in ("fcfs", "fair"):
                port = free_port()
                url = f"http://127.0.0.1:{port}"
                env = serve_env(root / policy, model, policy, args.token_budget, port, args.device)
                proc = start_server([str(Path(sys.executable).with_name("mmrag")), "serve"], f"{url}/health",
                                    env=env, log=root / f"{policy}.log")
                servers[policy] = (url, proc)
                setup_corpus(url, args.corpus, args.image_resolution, 8)
            for url, _ in servers.values():  # warm-up
                asyncio.run(run_load(url, args.corpus, schedule(args, 999)[:6]))
            for r in range(args.rounds):
                plan = schedule(args, r)
                for policy in ("fcfs", "fair") if r % 2 == 0 else ("fair", "fcfs"):
                    res, took = asyncio.run(run_load(servers[policy][0], args.corpus, plan))
                    results[policy].append(res)
                    spans[policy].append(took)
                f, g = (text_ttfts(results[p][-1]) for p in ("fcfs", "fair"))
                print(f"round {r + 1}: text TTFT p99 fcfs {np.percentile(f, 99):.3f}s fair {np.percentile(g, 99):.3f}s"
                      f" | {len(plan) / spans['fcfs'][-1]:.2f} vs {len(plan) / spans['fair'][-1]:.2f} req/s | errors "
                      f"{sum(bool(x.error) for p in results for x in results[p][-1])}", flush=True)
        finally:
            for _, proc in servers.values():
                stop_server(proc)
    for policy in ("fcfs", "fair"):
        print(f"{policy}:")
        report([x for rs in results[policy] for x in rs], sum(spans[policy]))
    p99 = ratio_interval([t for rs in results["fair"] for t in text_ttfts(rs)],
                         [t for rs in results["fcfs"] for t in text_ttfts(rs)], percentile_stat(99))
    thr = interval(paired_ratios([1 / s for s in spans["fair"]], [1 / s for s in spans["fcfs"]]))
    print(machine_line())
    print(verdict("serving_p99_text_ratio", p99, 0.5, at_least=False))
    print(result_line({"serving_p99_text_ratio": p99, "serving_throughput_ratio": thr,
                       "errors": sum(bool(x.error) for p in results for rs in results[p] for x in rs)}))


def text_ttfts(results: list[Result]) -> list[float]:
    return [r.ttft for r in results if r.kind == "text" and not r.error]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--corpus", default="bench-serving")
    ap.add_argument("--setup", action="store_true", help="create the corpus and upload pages first")
    ap.add_argument("--image-count", type=int, default=4)
    ap.add_argument("--image-resolution", choices=sorted(RESOLUTIONS), default="page")
    ap.add_argument("--tokens-per-image", type=int, default=320, help="visual tokens per evidence image")
    ap.add_argument("--input-len", type=int, default=16, help="question length in words")
    ap.add_argument("--output-len", type=int, default=16, help="max_new_tokens")
    ap.add_argument("--rate", type=float, default=None,
                    help="requests/s (inf: all at once; default inf, or 2 with --compare-admission)")
    ap.add_argument("--num-prompts", type=int, default=None,
                    help="prompts (per round with --compare-admission: 40 --quick, else 200; plain: 50)")
    ap.add_argument("--text-share", type=float, default=0.0, help="fraction of text-only prompts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare-admission", action="store_true", help="fcfs vs fair servers, started here")
    ap.add_argument("--token-budget", type=int, default=4096,
                    help="engine token budget (--compare-admission): one 4-page answer (~2,200 tokens) fits")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", default="cpu", help="VLM device of the servers started here")
    ap.add_argument("--quick", action="store_true", help="--compare-admission: 40 prompts per round (full: 200)")
    args = ap.parse_args()
    print(machine_line(), flush=True)
    if args.compare_admission:  # --quick and the full mode: the same arrival schedule, the full one longer
        args.rate = 2.0 if args.rate is None else args.rate
        args.num_prompts = args.num_prompts or (40 if args.quick else 200)
        args.text_share = 0.8 if args.text_share == 0.0 else args.text_share
        compare_admission(args)
    else:
        args.rate = float("inf") if args.rate is None else args.rate
        args.num_prompts = args.num_prompts or 50
        plain(args)


if __name__ == "__main__":
    main()
