"""Encoder-cache benchmark: TTFT of answers whose evidence pages are cached vs cold.

Real high-resolution inputs (docling PDF pages rendered at 200 dpi with PyMuPDF, plus the scanned
photos), the real Qwen2-VL image processor (min 56*56, max 1280*28*28 pixels), and a scaled-down
random-weight Qwen2.5-VL whose vision-tower : language-model compute per image token equals
Qwen2.5-VL-7B's (computed below from the 7B config numbers). Every answer sends 4 pages.

    python -m bench.encoder_cache --quick

ends with ``RESULT ttft_ratio=<warm/cold> encoder_share=<share of cold TTFT in decode+preprocess+encode>``.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import tempfile
import time
from pathlib import Path

import torch

from mmrag.generate.answer import AnswerService, TokenDelta
from mmrag.generate.config import VLMConfig
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult

CORPUS = Path("/work/shared/corpus/docling")
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


def render_inputs(dpi: int = 200, max_pages: int = 12) -> list[tuple[str, bytes]]:
    """PNG bytes of PDF pages at ``dpi`` plus the scanned photos; ``(label, bytes)``."""
    import pymupdf

    out: list[tuple[str, bytes]] = []
    for path in sorted(glob.glob(str(CORPUS / "pdf" / "*.pdf"))):
        with pymupdf.open(path) as doc:
            for page in doc:
                out.append((f"{Path(path).name} p{page.number + 1}", page.get_pixmap(dpi=dpi).tobytes("png")))
                if len(out) >= max_pages:
                    break
        if len(out) >= max_pages:
            break
    for name in ("old_newspaper.png", "qr_bill_example.jpg"):
        out.append((name, (CORPUS / "scans" / name).read_bytes()))
    return out


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
    """AnswerService over an in-memory 'corpus': question i retrieves pages i*per_answer... ."""
    images = {f"pg{i}": data for i, (_, data) in enumerate(pages)}

    def search(corpus: str, req: SearchRequest) -> SearchResult:
        start = int(req.query.split("#")[1]) * per_answer
        ids = [f"pg{(start + j) % len(pages)}" for j in range(per_answer)]
        ev = [
            Evidence(EvidenceKind.PAGE, corpus, "d", pages[int(p[2:])][0], p, 1, 1.0 - j / 10)
            for j, p in enumerate(ids)
        ]
        return SearchResult(ev, {})

    return AnswerService(search, lambda corpus, pid: images[pid], engine, max_tokens_per_image=1280)


def ask(service: AnswerService, q: int, per_answer: int, budget: int) -> tuple[float, dict[str, float]]:
    """Answer-level TTFT (call -> first token) and the final timings."""
    t0 = time.perf_counter()
    ttft, timings = 0.0, {}
    for ev in service.answer_stream(
        "bench", f"question #{q}", top_k=per_answer, visual_token_budget=budget, max_new_tokens=4
    ):
        if isinstance(ev, TokenDelta) and not ttft:
            ttft = time.perf_counter() - t0
        if ev.event == "done":
            timings = ev.timings  # type: ignore[union-attr]
    return ttft, timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="4 answers cold + 4 warm")
    ap.add_argument("--answers", type=int, default=6)
    ap.add_argument("--device", default="cpu", help="torch device of the model (cpu, cuda)")
    ap.add_argument(
        "--budget",
        type=int,
        default=VLMConfig().visual_token_budget,
        help="visual tokens per answer (default: the engine default, 1280 = 320 per page)",
    )
    args = ap.parse_args()
    n = 4 if args.quick else args.answers
    per_answer = 4
    torch.manual_seed(0)
    v7, l7 = macs_per_image_token(QWEN25VL_7B)
    vs, ls = macs_per_image_token(SCALED)
    print(
        f"vision/LM MACs per image token: Qwen2.5-VL-7B {v7 / 1e9:.2f}G/{l7 / 1e9:.2f}G = {v7 / l7:.3f}; "
        f"scaled {vs / 1e6:.2f}M/{ls / 1e6:.2f}M = {vs / ls:.3f}"
    )
    pages = render_inputs(max_pages=n * per_answer - 2)
    print(f"inputs: {len(pages)} images, {statistics.mean(len(b) for _, b in pages) / 1e6:.2f} MB PNG/JPEG avg")
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
        for q in range(n):  # warm up code paths and kernels for every shape, then forget the features
            ask(service, q, per_answer, args.budget)
        engine.cache.clear()
        cold = [ask(service, q, per_answer, args.budget) for q in range(n)]
        warm = [ask(service, q, per_answer, args.budget) for q in range(n)]
        engine.close()
    cold_ttft = statistics.mean(t for t, _ in cold)
    warm_ttft = statistics.mean(t for t, _ in warm)
    image_s = statistics.mean(t["preprocess_s"] + t["encoder_s"] + t["encoder_queue_s"] for _, t in cold)
    enc_s = statistics.mean(t["encoder_s"] for _, t in cold)
    pre_s = statistics.mean(t["preprocess_s"] for _, t in cold)
    prefill = statistics.mean(t["prefill_s"] for _, t in cold)
    print(
        f"cold: ttft {cold_ttft:.3f}s (decode+preprocess {pre_s:.3f}s, encoder {enc_s:.3f}s, prefill "
        f"{prefill:.3f}s, visual tokens {cold[0][1]['visual_tokens']:.0f}); warm: ttft {warm_ttft:.3f}s, "
        f"hits {sum(t['cache_hits'] for _, t in warm):.0f}/{n * per_answer}"
    )
    print(f"measured encoder/prefill time per request: {enc_s / prefill:.3f} (MAC ratio {vs / ls:.3f})")
    print(f"RESULT ttft_ratio={warm_ttft / cold_ttft:.3f} encoder_share={image_s / cold_ttft:.3f}")


if __name__ == "__main__":
    main()
