"""Encoder-cache benchmark: answer TTFT with 0 %, 50 % and 100 % of the evidence pages cached.

Real high-resolution inputs (docling PDF pages rendered at 200 dpi with PyMuPDF, plus the scanned
photos), the real Qwen2-VL image processor (min 56*56, max 1280*28*28 pixels), and a scaled-down
random-weight Qwen2.5-VL whose vision-tower : language-model compute per image token equals
Qwen2.5-VL-7B's (computed below from the 7B config numbers). Every answer sends 4 pages.

Each of ``--answers`` answers (20 with ``--quick``) is measured in the three cache states, the
order rotating from answer to answer: the cache is cleared, then 0, 2 or 4 of its pages are encoded
by a priming answer with the same per-page token plan, then the answer is timed (call -> first
token). In the same rotation, a fourth measurement times **the encoder alone** by wall clock: the
answer's 4 pages planned as the answer plans them, each through ``backend.encode`` (decode +
preprocess + vision tower) outside the engine. Per answer: ``ttft(100 %) / ttft(0 %)``,
``ttft(50 %) / ttft(0 %)`` and ``encoder_saved = (ttft(0 %) - ttft(100 %)) / encoder alone``: the
share of the encoder's wall time the cache takes off the answer, from wall times of answers
(the engine's stage timers of cached pages are 0 by construction, so they prove nothing; they are
printed only to say where the time went). Medians over the answers with bootstrap intervals.

    python -m bench.encoder_cache --quick

ends with ``RESULT ttft_ratio=… _lo _hi ttft_ratio_half=… encoder_saved=… encoder_share=…``
(``encoder_share``: encoder alone ÷ cold TTFT, the most the cache could take off).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from bench._pages import render_pages
from bench._stats import machine_line, result_line, verdict
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.generate.answer_service import AnswerService, TokenDelta
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult
from mmrag.vlm_config import VLMConfig

# Qwen/Qwen2.5-VL-7B-Instruct config.json (text and vision_config)
QWEN25VL_7B = dict(
    hidden=3584,
    intermediate=18944,
    layers=28,
    heads=28,
    kv_heads=4,
    vis_hidden=1280,
    vis_intermediate=3420,
    vis_depth=32,
    merge=2,
)
# the scaled-down model: LM shape ratios of the 7B, vision depth chosen to keep its compute ratio
SCALED = dict(
    hidden=384,
    intermediate=2031,
    layers=4,
    heads=6,
    kv_heads=2,
    vis_hidden=96,
    vis_intermediate=256,
    vis_depth=9,
    merge=2,
)


def macs_per_image_token(c: dict[str, int]) -> tuple[float, float]:
    """``(vision MACs, LM MACs)`` per merged image token (linear layers; attention scores excluded).

    Vision: merge**2 patches per token, each through ``vis_depth`` blocks of qkv+o (4 h^2) and a
    gated MLP (3 h i), then the patch merger (4h -> 4h -> hidden). LM: q,o (2 H^2), k,v with
    ``kv_heads`` (2 H * kv * H/heads) and a gated MLP (3 H I) per layer.
    """
    hv, iv, m2 = c["vis_hidden"], c["vis_intermediate"], c["merge"] ** 2
    vision = m2 * c["vis_depth"] * (4 * hv * hv + 3 * hv * iv) + (m2 * hv) ** 2 + m2 * hv * c["hidden"]
    h, head_dim = c["hidden"], c["hidden"] // c["heads"]
    lm = c["layers"] * (2 * h * h + 2 * h * c["kv_heads"] * head_dim + 3 * h * c["intermediate"])
    return float(vision), float(lm)


def scaled_model_dir(folder: Path) -> Path:
    """Save the scaled random Qwen2.5-VL + real processor; loadable like a hub id."""
    from tests.generate.tiny_vlm import save_tiny_qwen25vl

    c = SCALED
    return save_tiny_qwen25vl(
        folder,
        hidden=c["hidden"],
        layers=c["layers"],
        heads=c["heads"],
        kv_heads=c["kv_heads"],
        intermediate=c["intermediate"],
        vis_depth=c["vis_depth"],
        vis_hidden=c["vis_hidden"],
        vis_heads=2,
        vis_intermediate=c["vis_intermediate"],
    )


def page_service(engine: VLMEngine, pages: list[tuple[str, bytes]], per_answer: int) -> AnswerService:
    """AnswerService over an in-memory 'corpus': question ``#q`` retrieves pages q*per_answer...;
    ``#q:k`` only the first k of them (to prime the cache)."""
    images = {f"pg{i}": data for i, (_, data) in enumerate(pages)}

    def search(corpus: str, req: SearchRequest) -> SearchResult:
        q, _, k = req.query.split("#")[1].partition(":")
        start = int(q) * per_answer
        ids = [f"pg{(start + j) % len(pages)}" for j in range(int(k) if k else per_answer)]
        ev = [
            Evidence(EvidenceKind.PAGE, corpus, "d", pages[int(p[2:])][0], p, 1, 1.0 - j / 10)
            for j, p in enumerate(ids)
        ]
        return SearchResult(ev, {})

    return AnswerService(search, lambda corpus, pid: images[pid], engine, max_tokens_per_image=1280)


def ask(service: AnswerService, query: str, top_k: int, budget: int) -> tuple[float, dict[str, float]]:
    """Answer-level TTFT (call -> first token) and the final timings."""
    t0 = time.perf_counter()
    ttft, timings = 0.0, {}
    for ev in service.answer_stream("bench", query, top_k=top_k, visual_token_budget=budget, max_new_tokens=4):
        if isinstance(ev, TokenDelta) and not ttft:
            ttft = time.perf_counter() - t0
        if ev.event == "done":
            timings = ev.timings  # type: ignore[union-attr]
    return ttft, timings


STAGES = ("preprocess_s", "encoder_queue_s", "encoder_s", "prefill_s")
STATES = (0, 50, 100)  # % of the answer's pages cached


def measure(engine: VLMEngine, service: AnswerService, q: int, state: int, per_answer: int,
            budget: int, warm_after_previous: bool = False) -> tuple[float, dict[str, float]]:
    """Clear the cache, prime ``state`` % of answer q's pages (same per-page plan), time answer q.

    At 100 % right after another state of the same answer, that answer has just cached every page:
    no priming needed (the hit count below checks it)."""
    cached = per_answer * state // 100
    if not (state == 100 and warm_after_previous):
        engine.cache.clear()
        if cached:
            ask(service, f"question #{q}:{cached}", cached, budget * cached // per_answer)
    ttft, timings = ask(service, f"question #{q}", per_answer, budget)
    expected = cached
    if int(timings["cache_hits"]) != expected:
        raise RuntimeError(f"answer {q} at {state} %: {timings['cache_hits']:.0f} hits, expected {expected}")
    return ttft, timings


def encoder_alone(backend: TransformersBackend, pages: list[tuple[str, bytes]], q: int, per_answer: int,
                  budget: int) -> tuple[float, int]:
    """Wall seconds of ``backend.encode`` over answer q's pages, planned as the answer plans them,
    and the visual tokens of that plan (checked against the answer's)."""
    from mmrag.generate.base import image_input
    from mmrag.generate.visual_tokens import split_budget

    _, per_page = split_budget(per_answer, budget, 1280, 64)
    images = [image_input(pages[(q * per_answer + j) % len(pages)][1], backend.accounting, per_page)
              for j in range(per_answer)]
    t0 = time.perf_counter()
    for image in images:
        backend.encode(image)
    return time.perf_counter() - t0, sum(im.plan.tokens for im in images)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 answers")
    ap.add_argument("--answers", type=int, default=40)
    ap.add_argument("--device", default="cpu", help="torch device of the model (cpu, cuda)")
    ap.add_argument(
        "--budget",
        type=int,
        default=VLMConfig().visual_token_budget,
        help="visual tokens per answer (default: the engine default, 1280 = 320 per page)",
    )
    args = ap.parse_args()
    n = 20 if args.quick else args.answers
    per_answer = 4
    torch.manual_seed(0)
    v7, l7 = macs_per_image_token(QWEN25VL_7B)
    vs, ls = macs_per_image_token(SCALED)
    print(machine_line())
    print(
        f"vision/LM MACs per image token: Qwen2.5-VL-7B {v7 / 1e9:.2f}G/{l7 / 1e9:.2f}G = {v7 / l7:.3f}; "
        f"scaled {vs / 1e6:.2f}M/{ls / 1e6:.2f}M = {vs / ls:.3f}"
    )
    unique: dict[bytes, tuple[str, bytes]] = {}
    for label, data in render_pages(max_pages=44):  # identical pages would hit the cache within an answer
        unique.setdefault(data, (label, data))
    pages = list(unique.values())
    print(f"inputs: {len(pages)} images, {statistics.mean(len(b) for _, b in pages) / 1e6:.2f} MB PNG/JPEG avg; "
          f"{n} answers x {per_answer} pages x 3 cache states", flush=True)
    results: dict[int, list[tuple[float, dict[str, float]]]] = {s: [] for s in STATES}
    alone: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = VLMConfig(
            model=str(scaled_model_dir(Path(tmp) / "scaled-qwen25vl")),
            device=args.device,
            dtype="float32",
            token_budget=65536,
            encoder_cache_bytes=2 << 30,
            max_new_tokens=16,
        )
        backend = TransformersBackend.load(cfg)
        engine = VLMEngine(backend, cfg)
        service = page_service(engine, pages, per_answer)
        for state in STATES:  # warm up code paths and kernels
            measure(engine, service, 0, state, per_answer, args.budget)
        encoder_alone(backend, pages, 0, per_answer, args.budget)
        for q in range(n):
            order = STATES[q % 3:] + STATES[:q % 3]
            if q % 2 == 0:
                took, tokens = encoder_alone(backend, pages, q, per_answer, args.budget)
            for k, state in enumerate(order):
                results[state].append(measure(engine, service, q, state, per_answer, args.budget, k > 0))
            if q % 2 == 1:
                took, tokens = encoder_alone(backend, pages, q, per_answer, args.budget)
            if tokens != int(results[0][-1][1]["visual_tokens"]):
                raise RuntimeError(f"answer {q}: encoder-alone plan {tokens} visual tokens, the answer's "
                                   f"{results[0][-1][1]['visual_tokens']:.0f}")
            alone.append(took)
            print(f"answer {q + 1}/{n}: " + " | ".join(f"{s} % {results[s][-1][0]:.3f}s" for s in STATES)
                  + f" | encoder alone {alone[-1]:.3f}s | load {os.getloadavg()[0]:.1f}", flush=True)
        engine.close()
    report(results, alone, n, per_answer, vs / ls)


def report(results: dict[int, list[tuple[float, dict[str, float]]]], alone: list[float], n: int, per_answer: int,
           mac_ratio: float) -> None:
    cold, half, warm = (results[s] for s in STATES)
    print(f"\nmean seconds per answer ({n} answers x {per_answer} pages):")
    print(f"{'stage':<18}" + "".join(f"{f'{s} % cached':>14}" for s in STATES) + f"{'saved (0->100)':>16}")
    rows = {st: [statistics.mean(t[st] for _, t in results[s]) for s in STATES] for st in STAGES}
    ttft = [statistics.mean(x for x, _ in results[s]) for s in STATES]
    rows["other"] = [ttft[i] - sum(rows[st][i] for st in STAGES) for i in range(3)]
    saved_total = ttft[0] - ttft[2]
    for st, v in rows.items():
        share = (v[0] - v[2]) / saved_total if saved_total else 0.0
        print(f"{st:<18}" + "".join(f"{x:>14.3f}" for x in v) + f"{v[0] - v[2]:>10.3f} ({100 * share:.0f} %)")
    print(f"{'TTFT':<18}" + "".join(f"{x:>14.3f}" for x in ttft) + f"{saved_total:>10.3f}")
    ratio = interval(paired_ratios([x for x, _ in warm], [x for x, _ in cold]))
    ratio_half = interval(paired_ratios([x for x, _ in half], [x for x, _ in cold]))
    saved = interval([(c - w) / a for (c, _), (w, _), a in zip(cold, warm, alone, strict=True)])
    enc_share = interval([a / c for (c, _), a in zip(cold, alone, strict=True)])
    print(f"encoder alone (wall, 4 pages through backend.encode): {statistics.mean(alone):.3f}s per answer; "
          f"TTFT saved by the cache: {statistics.mean(c - w for (c, _), (w, _) in zip(cold, warm, strict=True)):.3f}s")
    prefill = statistics.mean(t["prefill_s"] for _, t in cold)
    print(f"measured encoder/prefill time per cold answer: "
          f"{statistics.mean(t['encoder_s'] for _, t in cold) / prefill:.3f} (MAC ratio {mac_ratio:.3f})")
    print(machine_line())
    print(verdict("ttft_ratio", ratio, 0.5, at_least=False))
    print(verdict("encoder_saved", saved, 0.9, at_least=True))
    print(result_line({"ttft_ratio": ratio, "ttft_ratio_half": ratio_half, "encoder_saved": saved,
                       "encoder_share": enc_share}))


if __name__ == "__main__":
    main()
