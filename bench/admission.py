"""Admission benchmark: token-aware fair admission vs FCFS under a mixed load, on the real engine.

80 % text-only short questions, 20 % questions with 4 pages (docling PDF pages rendered at
``--dpi``, the real Qwen2-VL processor, 320 visual tokens per page), a tiny random Qwen2.5-VL.
Open-loop Poisson arrivals, the same seeded schedule for both policies; ``--seeds`` schedules of
``--requests`` requests each, the two policies ABBA-alternated over the seeds. Conditions:

* ``tight``: a token budget of 2,048 (one image request plus a few text ones fit at once), at
  ``--load`` (0.85) x the serial capacity measured in this run, and at ``--saturation`` (1.5) x it
  (arrivals above capacity: throughput is the engine's, not the arrival rate);
* ``default``: the engine's default budget (``VLMConfig().token_budget``) at 0.85 x capacity.

Per request: text TTFT (submit -> first token, admission wait included), end time. Per run:
throughput = completed / (last end - first arrival). Audit: every admitted request's real prompt
tokens (text + visual, as the backend counted them) + generated tokens, against the cost admission
charged it (prompt estimate + ``max_new_tokens``); requests over their charge must be 0; the
over-reserved share is ``1 - used / charged``.

    python -m bench.admission --quick

ends with ``RESULT p99_text_ratio=… _lo _hi`` (fair / FCFS text TTFT p99, tight budget, 0.85 load;
bootstrap over requests) ``throughput_ratio=…`` (saturated, per-seed ratios) ``throughput_ratio_085``
``default_p99_text_ratio`` ``over_charge=<requests> over_reserved=<share> budget_violations=<n>``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench._pages import render_pages
from bench._stats import (
    Estimate,
    interval,
    machine_line,
    paired_ratios,
    percentile_stat,
    ratio_interval,
    result_line,
    verdict,
)
from mmrag.generate.admission import AdmissionController, Policy, Ticket
from mmrag.generate.backend import GenerationRequest, ImageInput, RequestTimings, image_input
from mmrag.generate.config import VLMConfig
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend

QUESTIONS = [
    "What is the revenue in 2023?",
    "Which page mentions the pipeline diagram?",
    "Describe the image.",
    "Table of contents?",
]
TIGHT_BUDGET = 2048


class AuditedAdmission(AdmissionController):
    """Records every admission's charge, and admissions that leave more in flight than the budget."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.violations = 0
        self.charged: dict[str, int] = {}

    def _admit(self, ticket: Ticket, now: float) -> None:
        super()._admit(ticket, now)
        self.charged[ticket.request_id] = ticket.cost
        if self.used_tokens > self.token_budget:
            self.violations += 1


@dataclass
class Outcome:
    kind: str  # "text" | "image"
    arrival: float
    ttft: float = 0.0
    end: float = 0.0
    used_tokens: int = 0  # real prompt + generated tokens
    charged: int = 0  # what admission charged
    error: str = ""


@dataclass
class Run:
    outcomes: list[Outcome]
    violations: int
    peak: int

    @property
    def throughput(self) -> float:
        ok = [o for o in self.outcomes if not o.error]
        return len(ok) / (max(o.end for o in ok) - min(o.arrival for o in self.outcomes))

    def ttfts(self, kind: str) -> list[float]:
        return [o.ttft for o in self.outcomes if o.kind == kind and not o.error]


def workload(n: int, rate: float, pages: list[ImageInput], seed: int) -> list[tuple[float, GenerationRequest]]:
    """Seeded Poisson arrivals; 20 % of requests carry 4 consecutive pages."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        images = [pages[(4 * i + j) % len(pages)] for j in range(4)] if rng.random() < 0.2 else []
        out.append((t, GenerationRequest(f"s{seed}r{i}", rng.choice(QUESTIONS), images, max_new_tokens=16)))
    return out


def run(policy: Policy, backend: TransformersBackend, cfg: VLMConfig, budget: int,
        load: list[tuple[float, GenerationRequest]]) -> Run:
    admission = AuditedAdmission(budget, max_queue_requests=100_000, max_queue_tokens=1 << 40,
                                 queue_timeout_s=600, starvation_s=cfg.starvation_s, policy=policy)
    engine = VLMEngine(backend, cfg, admission=admission)
    outcomes = [Outcome("image" if r.images else "text", at) for at, r in load]
    t0 = time.perf_counter() + 0.2

    def client(i: int) -> None:
        at, request = load[i]
        time.sleep(max(0.0, t0 + at - time.perf_counter()))
        timings = RequestTimings()
        try:
            for _ in engine.start(request, timings):
                pass
            outcomes[i].ttft = timings.ttft_s
            outcomes[i].used_tokens = timings.prompt_tokens + timings.new_tokens
        except Exception as exc:  # recorded, reported
            outcomes[i].error = repr(exc)
        outcomes[i].end = time.perf_counter() - t0

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(load))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    engine.close(close_backend=False)  # keep the backend for the next run
    for o, (_, r) in zip(outcomes, load, strict=True):
        o.charged = admission.charged.get(r.request_id, 0)
    return Run(outcomes, admission.violations, admission.peak_used)


def service_time(backend: TransformersBackend, cfg: VLMConfig, pages: list[ImageInput]) -> float:
    """Mean seconds per request of the 80/20 mix run one at a time (1 / serial capacity)."""
    engine = VLMEngine(backend, cfg)
    probe = workload(60, 1.0, pages, seed=1000)
    probe = [x for x in probe if not x[1].images][:8] + [x for x in probe if x[1].images][:3]
    for _, request in probe[:2] + probe[-1:]:  # warm-up, untimed
        for _ in engine.start(request):
            pass
    took: dict[str, list[float]] = {"text": [], "image": []}
    for _, request in probe:
        t0 = time.perf_counter()
        for _ in engine.start(request):
            pass
        took["image" if request.images else "text"].append(time.perf_counter() - t0)
    engine.close(close_backend=False)
    text, image = statistics.mean(took["text"]), statistics.mean(took["image"])
    print(f"serial service time (mean after warm-up): text {text:.3f}s, image {image:.3f}s", flush=True)
    return 0.8 * text + 0.2 * image


def condition(name: str, budget: int, rate: float, args: argparse.Namespace, backend: TransformersBackend,
              cfg: VLMConfig, pages: list[ImageInput]) -> dict[str, list[Run]]:
    """Both policies over every seed, ABBA-alternated."""
    runs: dict[str, list[Run]] = {"fcfs": [], "fair": []}
    for k, seed in enumerate(range(args.seeds)):
        load = workload(args.requests, rate, pages, seed)
        for policy in ("fcfs", "fair") if k % 2 == 0 else ("fair", "fcfs"):
            runs[policy].append(run(policy, backend, cfg, budget, load))  # type: ignore[arg-type]
        f, g = runs["fcfs"][-1], runs["fair"][-1]
        print(f"{name} seed {seed}: text p99 fcfs {p99(f.ttfts('text')):.3f}s fair {p99(g.ttfts('text')):.3f}s | "
              f"throughput fcfs {f.throughput:.2f}/s fair {g.throughput:.2f}/s | peak {f.peak}/{g.peak} of "
              f"{budget} | errors {sum(bool(o.error) for o in f.outcomes + g.outcomes)}", flush=True)
    return runs


def p99(values: list[float]) -> float:
    return float(np.percentile(values, 99)) if values else float("nan")


def pooled(runs: list[Run], kind: str) -> list[float]:
    return [t for r in runs for t in r.ttfts(kind)]


def summarize(name: str, runs: dict[str, list[Run]]) -> tuple[Estimate, Estimate]:
    text = ratio_interval(pooled(runs["fair"], "text"), pooled(runs["fcfs"], "text"), percentile_stat(99))
    thr = interval(paired_ratios([r.throughput for r in runs["fair"]], [r.throughput for r in runs["fcfs"]]))
    for policy in ("fcfs", "fair"):
        t, i = pooled(runs[policy], "text"), pooled(runs[policy], "image")
        print(f"  {name} {policy:4s}: text TTFT p50 {statistics.median(t):.3f}s p99 {p99(t):.3f}s (n={len(t)}) | "
              f"image TTFT p50 {statistics.median(i):.3f}s p99 {p99(i):.3f}s (n={len(i)}) | "
              f"{statistics.median(r.throughput for r in runs[policy]):.2f} req/s")
    print(f"  {name}: p99 text ratio {text.value:.3f} [{text.lo:.3f}, {text.hi:.3f}]; throughput ratio "
          f"{thr.value:.3f} [{thr.lo:.3f}, {thr.hi:.3f}]", flush=True)
    return text, thr


def audit(all_runs: list[Run]) -> tuple[int, float, int]:
    """(requests whose real tokens exceeded their charge, over-reserved share, admitted requests)."""
    done = [o for r in all_runs for o in r.outcomes if not o.error and o.charged]
    over = sum(o.used_tokens > o.charged for o in done)
    used, charged = sum(o.used_tokens for o in done), sum(o.charged for o in done)
    return over, 1.0 - used / charged, len(done)


def main() -> None:
    from tests.generate.tiny_vlm import save_tiny_qwen25vl

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 seeds x 60 requests per condition and policy")
    ap.add_argument("--requests", type=int, default=None, help="requests per seed (default 200: 1,000 per arm)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--load", type=float, default=0.85, help="offered load / serial capacity")
    ap.add_argument("--saturation", type=float, default=1.5, help="offered load of the saturated condition")
    ap.add_argument("--dpi", type=int, default=100, help="page render resolution (decode cost per page)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    args.requests = args.requests or (60 if args.quick else 200)
    print(machine_line(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = VLMConfig(model=str(save_tiny_qwen25vl(Path(tmp) / "tiny")), device=args.device, dtype="float32",
                        encoder_cache_bytes=0, max_new_tokens=16, starvation_s=2.0)
        backend = TransformersBackend.load(cfg)
        pages = [image_input(data, backend.accounting, 320, label)
                 for label, data in render_pages(dpi=args.dpi, max_pages=40)]
        capacity = 1.0 / service_time(backend, cfg, pages)
        print(f"{args.seeds} seeds x {args.requests} requests per condition and policy; serial capacity "
              f"{capacity:.2f} req/s; {statistics.mean(p.plan.tokens for p in pages):.0f} visual tokens/page",
              flush=True)
        tight = condition("tight", TIGHT_BUDGET, args.load * capacity, args, backend, cfg, pages)
        saturated = condition("saturated", TIGHT_BUDGET, args.saturation * capacity, args, backend, cfg, pages)
        default = condition("default", cfg.token_budget, args.load * capacity, args, backend, cfg, pages)
        backend.close()
    p99_ratio, thr085 = summarize(f"tight {TIGHT_BUDGET}, {args.load} load", tight)
    _, thr_sat = summarize(f"tight {TIGHT_BUDGET}, {args.saturation} load", saturated)
    default_p99, _ = summarize(f"default {cfg.token_budget}, {args.load} load", default)
    runs = [r for c in (tight, saturated, default) for rs in c.values() for r in rs]
    over, reserved, admitted = audit(runs)
    violations = sum(r.violations for r in runs)
    print(f"audit: {admitted} admitted requests, {over} used more tokens than charged; "
          f"{100 * reserved:.1f} % of the charged tokens were never used (max_new_tokens not generated, "
          f"prompt estimate vs real prompt)")
    print(machine_line())
    print(verdict("p99_text_ratio", p99_ratio, 0.5, at_least=False))
    print(verdict("throughput_ratio (saturated)", thr_sat, 0.95, at_least=True))
    print(result_line({"p99_text_ratio": p99_ratio, "throughput_ratio": thr_sat, "throughput_ratio_085": thr085,
                       "default_p99_text_ratio": default_p99, "over_charge": over, "over_reserved": reserved,
                       "budget_violations": violations}))


if __name__ == "__main__":
    main()
