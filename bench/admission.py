"""Admission benchmark: token-aware fair admission vs FCFS under a mixed load, on the real engine.

80% text-only short questions, 20% questions with 4 high-resolution pages (docling PDF pages at
200 dpi, real Qwen2-VL processor, 320 visual tokens per page). Open-loop Poisson arrivals at the
same seeded schedule for both policies, the same token budget (about one image request plus a
few text ones), a tiny random Qwen2.5-VL (compute is dominated by real image decode/resize).

    python -m bench.admission --quick

ends with ``RESULT p99_text_ratio=<fair/fcfs> throughput_ratio=<fair/fcfs> budget_violations=<n>``.
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


class CheckedAdmission(AdmissionController):
    """Counts admissions that would leave more tokens in flight than the budget."""

    violations = 0

    def _admit(self, ticket: Ticket, now: float) -> None:
        super()._admit(ticket, now)
        if self.used_tokens > self.token_budget:
            self.violations += 1


@dataclass
class Outcome:
    kind: str  # "text" | "image"
    arrival: float
    ttft: float = 0.0
    end: float = 0.0
    error: str = ""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def workload(n: int, rate: float, pages: list[ImageInput], seed: int = 0) -> list[tuple[float, GenerationRequest]]:
    """Seeded Poisson arrivals; 20% of requests carry 4 consecutive pages."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        images = [pages[(4 * i + j) % len(pages)] for j in range(4)] if rng.random() < 0.2 else []
        out.append((t, GenerationRequest(f"r{i}", rng.choice(QUESTIONS), images, max_new_tokens=16)))
    return out


def run(
    policy: Policy, backend: TransformersBackend, cfg: VLMConfig, load: list[tuple[float, GenerationRequest]]
) -> tuple[list[Outcome], int, int]:
    admission = CheckedAdmission(
        cfg.token_budget,
        max_queue_requests=10_000,
        max_queue_tokens=1 << 30,
        queue_timeout_s=300,
        starvation_s=cfg.starvation_s,
        policy=policy,
    )
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
            outcomes[i].ttft = timings.ttft_s  # submit -> first token, admission wait included
        except Exception as exc:  # recorded, reported
            outcomes[i].error = repr(exc)
        outcomes[i].end = time.perf_counter() - t0

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(load))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    engine.close(close_backend=False)  # keep the backend for the next policy
    return outcomes, admission.violations, admission.peak_used


def service_time(backend: TransformersBackend, cfg: VLMConfig, probe: list[tuple[float, GenerationRequest]]) -> float:
    """Mean seconds per request of the 80/20 mix run one at a time (1 / serial capacity)."""
    engine = VLMEngine(backend, cfg)
    for _, request in probe[:2] + probe[-1:]:  # warm-up, untimed
        for _ in engine.start(request):
            pass
    took = {"text": [], "image": []}  # type: dict[str, list[float]]
    for _, request in probe:
        t0 = time.perf_counter()
        for _ in engine.start(request):
            pass
        took["image" if request.images else "text"].append(time.perf_counter() - t0)
    engine.close(close_backend=False)
    text, image = statistics.mean(took["text"]), statistics.mean(took["image"])
    print(f"serial service time (mean after warm-up): text {text:.3f}s, image {image:.3f}s")
    return 0.8 * text + 0.2 * image


def summarize(name: str, outcomes: list[Outcome], budget: int, peak: int) -> tuple[float, float]:
    text = [o.ttft for o in outcomes if o.kind == "text" and not o.error]
    image = [o.ttft for o in outcomes if o.kind == "image" and not o.error]
    span = max(o.end for o in outcomes) - min(o.arrival for o in outcomes)
    throughput = sum(not o.error for o in outcomes) / span
    errors = sum(bool(o.error) for o in outcomes)
    print(
        f"{name:5s}: text ttft p50 {percentile(text, 0.5):.3f}s p99 {percentile(text, 0.99):.3f}s | "
        f"image ttft p50 {percentile(image, 0.5):.3f}s p99 {percentile(image, 0.99):.3f}s | "
        f"{throughput:.2f} req/s | peak {peak}/{budget} tokens | errors {errors}"
    )
    return percentile(text, 0.99), throughput


def main() -> None:
    from bench.encoder_cache import render_inputs
    from tests.generate.tiny_vlm import save_tiny_qwen25vl

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="80 requests")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--rate", type=float, default=None, help="arrivals/s (default: --load x measured capacity)")
    ap.add_argument("--load", type=float, default=0.85, help="offered load as a fraction of serial capacity")
    args = ap.parse_args()
    n = 80 if args.quick else args.requests
    with tempfile.TemporaryDirectory() as tmp:
        cfg = VLMConfig(
            model=str(save_tiny_qwen25vl(Path(tmp) / "tiny")),
            device="cpu",
            dtype="float32",
            token_budget=2048,
            encoder_cache_bytes=0,
            max_new_tokens=16,
            starvation_s=2.0,
        )
        backend = TransformersBackend.load(cfg)
        pages = [image_input(data, backend.accounting, 320, label) for label, data in render_inputs(max_pages=40)]
        mixed = workload(60, 1.0, pages, seed=1)
        probe = [x for x in mixed if not x[1].images][:8] + [x for x in mixed if x[1].images][:3]
        rate = args.rate or args.load / service_time(backend, cfg, probe)
        load = workload(n, rate, pages)
        print(
            f"{n} requests at {rate:.2f}/s: {sum(1 for _, r in load if r.images)} with 4 pages "
            f"({statistics.mean(p.plan.tokens for p in pages):.0f} visual tokens/page), "
            f"budget {cfg.token_budget}"
        )
        fcfs, v1, peak1 = run("fcfs", backend, cfg, load)
        fair, v2, peak2 = run("fair", backend, cfg, load)
        backend.close()
    p99_fcfs, thr_fcfs = summarize("fcfs", fcfs, cfg.token_budget, peak1)
    p99_fair, thr_fair = summarize("fair", fair, cfg.token_budget, peak2)
    print(
        f"RESULT p99_text_ratio={p99_fair / p99_fcfs:.3f} throughput_ratio={thr_fair / thr_fcfs:.3f} "
        f"budget_violations={v1 + v2}"
    )


if __name__ == "__main__":
    main()
