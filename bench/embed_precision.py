"""The text model's precision arms (``embed.text_precision``): quality against float32, forward
throughput, and the distance of each arm to what this CPU can compute.

1. **Quality**: every arm embeds the same page texts of the shared corpora (``--pages`` pages spread
   over ../shared/corpus/{filings,sec-10q,docling}, each page's text as the model sees it, truncated
   to its 256 tokens); per arm the cosine of each vector to float32's, median and 1st percentile.
2. **Throughput**: per round, each arm (ABBA-alternated) embeds the first ``--batch`` of those
   texts in one forward (the embedder's own ``compute``, the service's path): texts/s and real
   tokens/s; medians over rounds with 95 % intervals, and each arm over float32 paired per round.
3. **The limit**: a plain GEMM loop (``M x K @ K x N``, MiniLM's shapes: K = 384, N = 1536) in
   float32 and bfloat16 (``torch.mm``) and int8 (ONNX Runtime ``MatMulInteger``, uint8 x int8 ->
   int32, the kernel of the int8 arm) on the same threads, 0.5 s per dtype in every round (alternated
   with the arms, so each round's fraction pairs the model and the GEMM under the same load);
   multiply-adds per token of the model (layers x (4 H^2 + 2 H I) + attention 2 T H per layer) give
   each arm's achieved multiply-adds/s and its fraction of its own GEMM rate; chunks per page and tokens
   per chunk (the sample pages cut into the product's word windows, or ``--chunks-per-page`` from
   ``bench.ingest``) give multiply-adds per page and the pages/s each GEMM rate would allow.

    python -m bench.embed_precision [--pages 600] [--rounds 10] [--batch 32] [--threads 2]
        [--arms float32,bf16,int8,int8_u8u8]

An arm is a precision (int8: with the kernels this CPU gets, ``mmrag.cpu_kernels``) or
``int8_u8s8`` / ``int8_u8u8`` (those kernels forced). bf16 is refused on a CPU without native bfloat16.

ends with ``RESULT cos_median_<arm>=.. cos_p1_<arm>=.. texts_per_s_<arm>=.. speedup_<arm>=..
gemm_gmacs_<dtype>=.. limit_fraction_<arm>=..``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench._stats import Estimate, alternate, interval, machine_line, paired_ratios, result_line
from mmrag.cpu_kernels import this_cpu
from mmrag.embed.base import EmbedderOptions, load_embedder

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpus"
CORPORA = ("filings/pdf", "sec-10q", "docling/pdf")
SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
GEMM_DTYPE = {"float32": "float32", "bf16": "bf16", "int8": "int8"}  # the GEMM each arm's matmuls use


def page_texts(n: int) -> list[str]:
    """About ``n`` page texts (100+ characters) spread evenly over every page of the shared corpora."""
    import pymupdf

    pdfs = [pdf for folder in CORPORA for pdf in sorted((SHARED / folder).glob("*.pdf"))]
    counts = []
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            counts.append(doc.page_count)
    step = max(1, sum(counts) // n)
    pages: list[str] = []
    seen = 0
    for pdf, count in zip(pdfs, counts, strict=True):
        with pymupdf.open(pdf) as doc:
            for i in range(-seen % step, count, step):
                if len(text := " ".join(doc[i].get_text().split())) >= 100:
                    pages.append(text)
        seen += count
    return pages[:n]


def macs_per_token(config: Any, tokens: float) -> float:
    """Multiply-adds of one token through the encoder: projections, feed-forward, attention."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return float(layers * (4 * h * h + 2 * h * i + 2 * tokens * h))


def gemm_rate(dtype: str, seconds: float = 2.0) -> float:
    """Multiply-adds per second of a plain GEMM loop at MiniLM's shapes (2048 x 384 @ 384 x 1536)."""
    import torch

    m, k, n = 2048, 384, 1536
    if dtype == "int8":
        step = _int8_gemm(m, k, n, torch.get_num_threads())
    else:
        t = torch.bfloat16 if dtype == "bf16" else torch.float32
        a, b = torch.randn(m, k, dtype=t), torch.randn(k, n, dtype=t)
        step = lambda: a @ b  # noqa: E731
    step()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        calls += 1
    return calls * m * k * n / (time.perf_counter() - t0)


def _int8_gemm(m: int, k: int, n: int, threads: int) -> Any:
    """ONNX Runtime's ``MatMulInteger`` (uint8 x int8 -> int32: the VNNI kernel the int8 arm's
    quantised matmuls run on); torch's ``_int_mm`` is slower here than the int8 model itself."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])],
        [helper.make_tensor("b", TensorProto.INT8, [k, n], np.random.default_rng(0).integers(-128, 127, k * n))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    a = np.random.default_rng(1).integers(0, 255, (m, k), dtype=np.uint8)
    return lambda: session.run(None, {"a": a})


def chunk_shape(model: Any, texts: list[str]) -> tuple[float, float]:
    """Chunks per page and tokens per chunk (truncated as the model does) when the page texts are cut
    into the product's word windows (``chunk_spans`` with the default ``chunk_words`` / overlap)."""
    from mmrag.config import IngestConfig
    from mmrag.ingest.chunking import chunk_spans

    cfg = IngestConfig()
    chunks = [" ".join(words[a:b]) for t in texts for words in [t.split()]
              for a, b in chunk_spans(len(words), cfg.chunk_words, cfg.chunk_overlap)]
    tokens = sum(model.size(row) for row in model.prepare(chunks))
    return len(chunks) / len(texts), tokens / len(chunks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32, help="texts in one timed forward")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--arms", default=None, help="default: float32,int8 and bf16 where the CPU has it")
    ap.add_argument("--chunks-per-page", type=float, default=0.0,
                    help="chunks per page from bench.ingest (0: the sample pages cut into the product's windows)")
    ap.add_argument("--tokens-per-chunk", type=float, default=0.0, help="0: measured on those windows")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    print(machine_line(), flush=True)
    texts = page_texts(args.pages)
    arms = args.arms.split(",") if args.arms else ["float32", "int8", *(["bf16"] if this_cpu().native_bf16 else [])]
    models = {a: load_embedder(SPEC, arm_options(a)) for a in arms}
    for arm, model in models.items():
        print(f"{arm}: {model.kernels}", flush=True)
    values: dict[str, Estimate | float | int | str] = {"pages": len(texts)}
    vectors = {a: np.stack(m.embed_many(texts)) for a, m in models.items()}
    for arm, v in vectors.items():
        cos = (v * vectors["float32"]).sum(axis=1)
        values[f"cos_median_{arm}"], values[f"cos_p1_{arm}"] = float(np.median(cos)), float(np.percentile(cos, 1))
        print(f"{arm}: cosine to float32 median {np.median(cos):.5f} p1 {np.percentile(cos, 1):.5f} "
              f"min {cos.min():.5f} over {len(cos)} pages", flush=True)
    any_model = next(iter(models.values()))
    batch = any_model.prepare(texts[: args.batch])
    tokens = sum(any_model.size(row) for row in batch)

    def forward(model: Any) -> Any:
        return lambda _r: len(batch) / _timed(lambda: model.compute(batch))

    dtypes = sorted(set(GEMM_DTYPE[_precision(a)] for a in models))
    gemm_arms = {f"gemm_{d}": _gemm_arm(d) for d in dtypes}
    rates = alternate({**{a: forward(m) for a, m in models.items()}, **gemm_arms}, args.rounds)
    per_token = macs_per_token(any_model.model[0].auto_model.config, tokens / len(batch))  # type: ignore[attr-defined]
    gemm = {d: float(np.median(rates[f"gemm_{d}"])) * 1e9 for d in dtypes}
    for d in dtypes:
        values[f"gemm_gmacs_{d}"] = interval(rates[f"gemm_{d}"])
    chunks_per_page, chunk_tokens = chunk_shape(any_model, texts)
    chunks_per_page = args.chunks_per_page or chunks_per_page
    chunk_tokens = args.tokens_per_chunk or chunk_tokens
    values["chunks_per_page"], values["tokens_per_chunk"] = chunks_per_page, chunk_tokens
    for arm in models:
        r = rates[arm]
        values[f"texts_per_s_{arm}"] = interval(r)
        if arm != "float32":
            values[f"speedup_{arm}"] = interval(paired_ratios(r, rates["float32"]))
        achieved = [x * tokens / len(batch) * per_token / 1e9 for x in r]  # GMAC/s per round
        values[f"gmacs_{arm}"] = interval(achieved)
        # this round's model rate / this round's GEMM rate of its dtype (paired: the same moment's load)
        gemm_arm = f"gemm_{GEMM_DTYPE[_precision(arm)]}"
        values[f"limit_fraction_{arm}"] = interval(paired_ratios(achieved, rates[gemm_arm]))
    if chunks_per_page:
        page_macs = chunks_per_page * chunk_tokens * macs_per_token(any_model.model[0].auto_model.config,  # type: ignore[attr-defined]
                                                                         chunk_tokens)
        values["gmacs_per_page"] = page_macs / 1e9
        for d, rate in gemm.items():
            values[f"pages_per_s_limit_{d}"] = rate / page_macs
    print(f"forward batch: {len(batch)} texts, {tokens} real tokens; {per_token / 1e6:.2f} M multiply-adds per token")
    print(machine_line())
    print(result_line(values, digits=4))


def _precision(arm: str) -> str:
    return arm.split("_")[0]


def arm_options(arm: str) -> EmbedderOptions:
    """``float32``, ``bf16``, ``int8`` (the kernels this CPU gets), ``int8_u8s8`` / ``int8_u8u8`` (forced)."""
    precision, _, kernels = arm.partition("_")
    return EmbedderOptions(device="cpu", text_precision=precision, int8_kernels=kernels or "auto")


def _gemm_arm(dtype: str) -> Any:
    return lambda _r: gemm_rate(dtype, 0.5) / 1e9  # GMAC/s


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
