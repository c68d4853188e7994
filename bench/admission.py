"""Admission benchmark: token-aware fair admission vs FCFS under a mixed load, on the real engine.

80 % text-only short questions, 20 % questions with 4 pages (docling PDF pages rendered at
``--dpi``, the real Qwen2-VL processor, 320 visual tokens per page), a tiny random Qwen2.5-VL.
Open-loop Poisson arrivals, the same seeded schedule for both policies; ``--seeds`` schedules of
``--requests`` requests each, the two policies ABBA-alternated over the seeds.

**Capacity** is measured first, *batched*: ``--clients`` closed-loop clients (default 3 x the engine's
``max_batch``, so that the decode batch and the encoder thread are both kept busy) send the same
mix through the engine with the tight budget and FCFS; capacity = completed requests / wall seconds.
Conditions (token budget, offered rate):

* ``saturated``: the tight budget (2,048: one image request plus a few text ones fit at once) at
  ``--saturation`` (1.5) x the batched capacity. **Saturation is verified**, per seed, on the FCFS
  run: completed/s below the offered rate, and the requests in the system (submitted, not finished:
  waiting for admission, encoding, or queued for the decode loop) more at the last third of the
  arrivals than at the first third (the backlog grows); the targets count only where every seed verified.
* ``below``: the tight budget at ``--load`` (0.7) x capacity (reported, no target);
* ``default``: the engine's default budget (``VLMConfig().token_budget``) at ``--load`` x capacity.

Per request: text TTFT (submit -> first token, admission wait included), end time. Per run:
completed tokens/s = the tokens the backend prefilled and decoded for completed requests / (last
end - first arrival).

**Audit, from the backend, not from admission's books**: the in-process backend's decode loop
records what it ran (``ComputeLedger``): prompt tokens prefilled and tokens produced per request,
and the real tokens resident in the KV cache at every forward. ``budget_violations`` = forwards
whose resident KV exceeded the token budget; ``over_charge`` = requests whose prefilled + produced
tokens exceeded what admission charged them. (Admission's own counter never exceeding the budget
holds by design: it admits only when ``used + cost <= budget``; it is printed, not a result.)

    python -m bench.admission --quick

ends with ``RESULT p99_text_ratio=… _lo _hi`` (fair / FCFS text TTFT p99, saturated; bootstrap
over requests) ``tokens_ratio=…`` (completed tokens/s fair / FCFS, saturated, per seed)
``saturated_verified=0|1`` ``offered_over_capacity=…`` ``below_p99_text_ratio default_p99_text_ratio
over_charge=<requests> over_reserved=<share> budget_violations=<forwards> peak_kv_over_budget=…``.
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
from bench._stats import machine_line, result_line, verdict
from mmrag.evaluate.stats import Estimate, interval, paired_ratios, percentile_stat, ratio_interval
from mmrag.generate.admission import AdmissionController, Policy, Ticket
from mmrag.generate.base import GenerationRequest, ImageInput, RequestTimings, image_input
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.vlm_config import VLMConfig

QUESTIONS = [
    "What is the revenue in 2023?",
    "Which page mentions the pipeline diagram?",
    "Describe the image.",
    "Table of contents?",
]
TIGHT_BUDGET = 2048


class ChargingAdmission(AdmissionController):
    """Remembers what each admitted request was charged."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.charged: dict[str, int] = {}

    def _admit(self, ticket: Ticket, now: float) -> None:
        super()._admit(ticket, now)
        self.charged[ticket.request_id] = ticket.cost


@dataclass
class Outcome:
    kind: str  # "text" | "image"
    arrival: float
    in_system_at_arrival: int = 0  # requests submitted and not finished when this one arrived
    ttft: float = 0.0
    end: float = 0.0
    used_tokens: int = 0  # prefilled + produced, from the backend's ledger
    charged: int = 0  # what admission charged
    error: str = ""


@dataclass
class Run:
    outcomes: list[Outcome]
    offered: float  # requests/s of the schedule
    budget: int  # the token budget it ran under
    violations: int  # forwards whose resident KV exceeded the budget (backend ledger)
    peak_kv: int  # most real KV tokens resident at one forward (backend ledger)
    controller_peak: int  # admission's own peak (by design <= budget)

    def ok(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.error]

    @property
    def span(self) -> float:
        return max(o.end for o in self.ok()) - min(o.arrival for o in self.outcomes)

    @property
    def throughput(self) -> float:
        return len(self.ok()) / self.span

    @property
    def tokens_per_s(self) -> float:
        return sum(o.used_tokens for o in self.ok()) / self.span

    @property
    def window_tokens_per_s(self) -> float:
        """Tokens of requests completed while arrivals were still coming, per second of arrivals: the
        backlogged steady state, without the drain after the last arrival."""
        last = max(o.arrival for o in self.outcomes)
        first = min(o.arrival for o in self.outcomes)
        return sum(o.used_tokens for o in self.ok() if o.end <= last) / max(1e-9, last - first)

    def ttfts(self, kind: str) -> list[float]:
        return [o.ttft for o in self.ok() if o.kind == kind]

    @property
    def queue_grows(self) -> bool:
        third = max(1, len(self.outcomes) // 3)
        early = statistics.median(o.in_system_at_arrival for o in self.outcomes[:third])
        late = statistics.median(o.in_system_at_arrival for o in self.outcomes[-third:])
        return late > early

    @property
    def saturated(self) -> bool:
        return self.throughput < self.offered and self.queue_grows


def workload(n: int, rate: float, pages: list[ImageInput], seed: int) -> list[tuple[float, GenerationRequest]]:
    """Seeded Poisson arrivals; 20 % of requests carry 4 consecutive pages."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        images = [pages[(4 * i + j) % len(pages)] for j in range(4)] if rng.random() < 0.2 else []
        out.append((t, GenerationRequest(f"s{seed}r{i}", rng.choice(QUESTIONS), images, max_new_tokens=16)))
    return out


def engine_for(policy: Policy, backend: TransformersBackend, cfg: VLMConfig, budget: int) -> VLMEngine:
    admission = ChargingAdmission(budget, max_queue_requests=100_000, max_queue_tokens=1 << 40,
                                  queue_timeout_s=600, starvation_s=cfg.starvation_s, policy=policy)
    return VLMEngine(backend, cfg, admission=admission)


def run(policy: Policy, backend: TransformersBackend, cfg: VLMConfig, budget: int,
        load: list[tuple[float, GenerationRequest]], rate: float) -> Run:
    engine = engine_for(policy, backend, cfg, budget)
    admission: ChargingAdmission = engine.admission  # type: ignore[assignment]
    backend.ledger.reset()
    outcomes = [Outcome("image" if r.images else "text", at) for at, r in load]
    t0 = time.perf_counter() + 0.2
    in_system = [0]
    lock = threading.Lock()

    def client(i: int) -> None:
        at, request = load[i]
        time.sleep(max(0.0, t0 + at - time.perf_counter()))
        with lock:
            outcomes[i].in_system_at_arrival = in_system[0]
            in_system[0] += 1
        timings = RequestTimings()
        try:
            for _ in engine.start(request, timings):
                pass
            outcomes[i].ttft = timings.ttft_s
        except Exception as exc:  # recorded, reported
            outcomes[i].error = repr(exc)
        outcomes[i].end = time.perf_counter() - t0
        with lock:
            in_system[0] -= 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(load))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    engine.close(close_backend=False)  # keep the backend for the next run
    ledger = backend.ledger
    for o, (_, r) in zip(outcomes, load, strict=True):
        o.charged = admission.charged.get(r.request_id, 0)
        o.used_tokens = ledger.prefilled.get(r.request_id, 0) + ledger.decoded.get(r.request_id, 0)
    return Run(outcomes, rate, budget, sum(k > budget for k in ledger.kv_tokens), ledger.peak_kv_tokens,
               admission.peak_used)


def batched_capacity(backend: TransformersBackend, cfg: VLMConfig, pages: list[ImageInput], clients: int,
                     n: int) -> float:
    """Requests/s of ``clients`` closed-loop clients on the 80/20 mix, tight budget, FCFS."""
    engine = engine_for("fcfs", backend, cfg, TIGHT_BUDGET)
    mix = [r for _, r in workload(n, 1.0, pages, seed=1000)]
    for request in mix[:2] + [r for r in mix if r.images][:1]:  # warm-up, untimed
        for _ in engine.start(GenerationRequest("warm-" + request.request_id, request.prompt, request.images,
                                                max_new_tokens=request.max_new_tokens)):
            pass
    todo = iter(mix)
    lock = threading.Lock()

    def client() -> None:
        while True:
            with lock:
                request = next(todo, None)
            if request is None:
                return
            for _ in engine.start(request):
                pass

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.perf_counter() - t0
    engine.close(close_backend=False)
    print(f"batched capacity: {n} requests, {clients} closed-loop clients, budget {TIGHT_BUDGET}, FCFS: "
          f"{took:.2f}s = {n / took:.2f} req/s", flush=True)
    return n / took


def condition(name: str, budget: int, rate: float, args: argparse.Namespace, backend: TransformersBackend,
              cfg: VLMConfig, pages: list[ImageInput]) -> dict[str, list[Run]]:
    """Both policies over every seed, ABBA-alternated."""
    runs: dict[str, list[Run]] = {"fcfs": [], "fair": []}
    for k, seed in enumerate(range(args.seeds)):
        load = workload(args.requests, rate, pages, seed)
        for policy in ("fcfs", "fair") if k % 2 == 0 else ("fair", "fcfs"):
            runs[policy].append(run(policy, backend, cfg, budget, load, rate))  # type: ignore[arg-type]
        f, g = runs["fcfs"][-1], runs["fair"][-1]
        print(f"{name} seed {seed}: text p99 fcfs {p99(f.ttfts('text')):.3f}s fair {p99(g.ttfts('text')):.3f}s | "
              f"offered {rate:.2f}/s, completed fcfs {f.throughput:.2f}/s fair {g.throughput:.2f}/s | tokens/s "
              f"{f.tokens_per_s:.0f} / {g.tokens_per_s:.0f} | fcfs saturated {int(f.saturated)} (in system at arrival "
              f"{f.outcomes[0].in_system_at_arrival}->{f.outcomes[-1].in_system_at_arrival}) | KV peak {f.peak_kv}/"
              f"{g.peak_kv} of {budget} | errors {sum(bool(o.error) for o in f.outcomes + g.outcomes)}", flush=True)
    return runs


def p99(values: list[float]) -> float:
    return float(np.percentile(values, 99)) if values else float("nan")


def pooled(runs: list[Run], kind: str) -> list[float]:
    return [t for r in runs for t in r.ttfts(kind)]


def summarize(name: str, runs: dict[str, list[Run]]) -> tuple[Estimate, Estimate]:
    text = ratio_interval(pooled(runs["fair"], "text"), pooled(runs["fcfs"], "text"), percentile_stat(99))
    tokens = interval(paired_ratios([r.tokens_per_s for r in runs["fair"]], [r.tokens_per_s for r in runs["fcfs"]]))
    for policy in ("fcfs", "fair"):
        t, i = pooled(runs[policy], "text"), pooled(runs[policy], "image")
        print(f"  {name} {policy:4s}: text TTFT p50 {statistics.median(t):.3f}s p99 {p99(t):.3f}s (n={len(t)}) | "
              f"image TTFT p50 {statistics.median(i):.3f}s p99 {p99(i):.3f}s (n={len(i)}) | "
              f"{statistics.median(r.throughput for r in runs[policy]):.2f} req/s, "
              f"{statistics.median(r.tokens_per_s for r in runs[policy]):.0f} tokens/s")
    window = interval(paired_ratios([r.window_tokens_per_s for r in runs["fair"]],
                                    [r.window_tokens_per_s for r in runs["fcfs"]]))
    print(f"  {name}: p99 text ratio {text.value:.3f} [{text.lo:.3f}, {text.hi:.3f}]; completed tokens/s ratio "
          f"{tokens.value:.3f} [{tokens.lo:.3f}, {tokens.hi:.3f}]; while arrivals came (no drain) "
          f"{window.value:.3f} [{window.lo:.3f}, {window.hi:.3f}]", flush=True)
    return text, tokens


def audit(all_runs: list[Run]) -> tuple[int, float, int]:
    """(requests whose backend-counted tokens exceeded their charge, over-reserved share, admitted)."""
    done = [o for r in all_runs for o in r.ok() if o.charged]
    over = sum(o.used_tokens > o.charged for o in done)
    used, charged = sum(o.used_tokens for o in done), sum(o.charged for o in done)
    return over, 1.0 - used / charged, len(done)


def main() -> None:
    from tests.generate.tiny_vlm import save_tiny_qwen25vl

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5 seeds x 60 requests per condition and policy")
    ap.add_argument("--requests", type=int, default=None, help="requests per seed (default 200: 1,000 per arm)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--load", type=float, default=0.7, help="offered load / batched capacity, below saturation")
    ap.add_argument("--saturation", type=float, default=1.5, help="offered load / batched capacity, saturated")
    ap.add_argument("--clients", type=int, default=None, help="closed-loop clients of the capacity run")
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
        capacity = batched_capacity(backend, cfg, pages, args.clients or 3 * cfg.max_batch, 120)
        print(f"{args.seeds} seeds x {args.requests} requests per condition and policy; "
              f"{statistics.mean(p.plan.tokens for p in pages):.0f} visual tokens/page", flush=True)
        saturated = condition("saturated", TIGHT_BUDGET, args.saturation * capacity, args, backend, cfg, pages)
        below = condition("below", TIGHT_BUDGET, args.load * capacity, args, backend, cfg, pages)
        default = condition("default", cfg.token_budget, args.load * capacity, args, backend, cfg, pages)
        backend.close()
    p99_ratio, tokens = summarize(f"tight {TIGHT_BUDGET}, {args.saturation} x capacity", saturated)
    below_p99, _ = summarize(f"tight {TIGHT_BUDGET}, {args.load} x capacity", below)
    default_p99, _ = summarize(f"default {cfg.token_budget}, {args.load} x capacity", default)
    verified = all(r.saturated for r in saturated["fcfs"])
    runs = [r for c in (saturated, below, default) for rs in c.values() for r in rs]
    over, reserved, admitted = audit(runs)
    violations = sum(r.violations for r in runs)
    peak_share = max(r.peak_kv / r.budget for r in runs)
    print(f"saturation verified on every FCFS seed (completed < offered and the backlog grows): {verified} "
          f"({sum(r.saturated for r in saturated['fcfs'])}/{len(saturated['fcfs'])})")
    print(f"audit from the backend's ledger: {admitted} admitted requests, {over} computed more tokens than they "
          f"were charged; {violations} forwards ran with more KV tokens resident than the budget (peak "
          f"{peak_share:.3f} of it); {100 * reserved:.1f} % of the charged tokens were never computed "
          f"(max_new_tokens not generated). Admission's own peak <= budget: by design "
          f"(max {max(r.controller_peak for r in runs)})")
    print(machine_line())
    print(verdict("p99_text_ratio (saturated)", p99_ratio, 0.5, at_least=False)
          + ("" if verified else " -- saturation NOT verified: does not count"))
    print(verdict("tokens_ratio (saturated)", tokens, 0.95, at_least=True)
          + ("" if verified else " -- saturation NOT verified: does not count"))
    print(result_line({"p99_text_ratio": p99_ratio, "tokens_ratio": tokens, "saturated_verified": int(verified),
                       "offered_over_capacity": args.saturation, "capacity_req_s": capacity,
                       "below_p99_text_ratio": below_p99, "default_p99_text_ratio": default_p99,
                       "over_charge": over, "over_reserved": reserved, "budget_violations": violations,
                       "peak_kv_over_budget": peak_share}))


if __name__ == "__main__":
    main()
