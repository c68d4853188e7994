"""Embedding service efficiency and multi-vector index size.

    python -m bench.embed_service --quick

1. Service efficiency, per model: real page images (docling PDF pages rendered at 200 dpi, 1700 x
   2200 px, PNG) through the models' real processors, measured side by side
   (a) in-process: decode each PNG (the same ``decode_image`` the service uses) and call
       ``embed_batch`` on chunks of ``--batch`` images, back to back, with torch's default threads
       (every core), as a caller of the embedder in its own process would;
   (b) through the real HTTP service (``mmrag embed-serve`` subprocess on 127.0.0.1, ``--max-batch
       --batch``, its defaults otherwise: no idle wait, threads chosen by measurement) with
       ``--clients`` concurrent clients, each sending one page per request and waiting for its answer.
   Both arms embed the same ``clients x per_client`` pages per round (so ``--clients`` and
   ``--batch`` may differ), in ``--rounds`` ABBA-alternated rounds; per round ``service items/s /
   in-process items/s``. Models: the tiny random ColQwen2 (colpali-engine, real processor at
   vidore/colqwen2-v1.0's pixel budget) and the tiny random open_clip of ``tests/fixtures``, where
   HTTP, decoding and batching are a visible share of the time, and a random-weight ViT-B-32 (real
   architecture, compute-bound).
2. Index size per page: a tiny random ColQwen2 embeds a letter-size page; bytes for full
   float32/float16, hierarchical pooling (factors 2, 3), binary quantisation and the pooled
   prefetch vector.

Ends with ``RESULT service_ratio=<median> _lo _hi`` (the lowest-median model: the conservative
case) and ``service_ratio_<model>=...`` for each model.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from bench._http import free_port, start_server, stop_server
from bench._pages import render_pages
from bench._stats import alternate, machine_line, result_line, verdict
from mmrag.evaluate.stats import Estimate, interval, paired_ratios

VIT = "open_clip:ViT-B-32/none"


def page_image(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def model_specs(folder: Path, which: list[str]) -> dict[str, str]:
    """``name -> embedder spec`` of the models measured (tiny ones built offline under ``folder``)."""
    from tests.fixtures.tiny_models import build_tiny_colqwen2, build_tiny_open_clip

    specs: dict[str, str] = {}
    if "colqwen2" in which:  # vidore/colqwen2-v1.0's processor budget: max_pixels = 768 * 28 * 28
        specs["colqwen2"] = f"colpali:{build_tiny_colqwen2(folder / 'colqwen2', max_pixels=768 * 28 * 28)}"
    if "clip" in which:
        specs["clip"] = f"open_clip:local-dir:{build_tiny_open_clip(folder / 'clip') / 'local'}"
    if "vitb32" in which:
        specs["vitb32"] = VIT
    return specs


def in_process_rate(embedder: object, pngs: list[bytes], batch: int) -> float:
    """Items/s of decode + ``embed_batch`` over ``pngs`` in chunks of ``batch``."""
    from mmrag.imaging import decode_image

    start = time.perf_counter()
    for i in range(0, len(pngs), batch):
        images = [decode_image(b, max_bytes=1 << 30, max_pixels=1 << 30) for b in pngs[i:i + batch]]
        embedder.embed_batch(images)  # type: ignore[attr-defined]
    return len(pngs) / (time.perf_counter() - start)


def service_rate(url: str, spec: str, pngs: list[bytes], clients: int) -> float:
    """Items/s of ``clients`` closed-loop clients sending the ``pngs`` one per request."""
    per_client = len(pngs) // clients

    async def run() -> float:
        errors = 0

        async def client(http: httpx.AsyncClient, c: int) -> None:
            nonlocal errors
            for j in range(per_client):
                png = pngs[c * per_client + j]
                r = await http.post("/v1/embeddings/images", data={"model": spec, "encoding_format": "binary"},
                                    files=[("image", ("page.png", png, "image/png"))])
                errors += r.status_code != 200

        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as http:
            t0 = time.perf_counter()
            await asyncio.gather(*(client(http, c) for c in range(clients)))
            took = time.perf_counter() - t0
        if errors:
            raise RuntimeError(f"{errors} failed requests")
        return clients * per_client / took

    return asyncio.run(run())


def arms(embedder: object, spec: str, url: str, pngs: list[bytes],
         args: argparse.Namespace) -> dict[str, Callable[[int], float]]:
    return {"in-process": lambda r: in_process_rate(embedder, pngs, args.batch),
            "service": lambda r: service_rate(url, spec, pngs, args.clients)}


def efficiency(args: argparse.Namespace) -> dict[str, Estimate]:
    """Per model: the median over rounds of service items/s / in-process items/s, with its interval."""
    from mmrag.embed.base import EmbedderOptions, load_embedder
    from mmrag.embed.threads import cpu_cores, set_torch_threads

    set_torch_threads(cpu_cores())  # the in-process arm: torch's default, every core
    n = args.clients * args.per_client
    pages = [b for _, b in render_pages(dpi=200, max_pages=n, scans=False)]
    pngs = (pages * (n // len(pages) + 1))[:n]
    print(f"{len(pngs)} page images per arm and round, {np.mean([len(b) for b in pngs]) / 1e6:.2f} MB PNG each; "
          f"{args.clients} clients, batch {args.batch}", flush=True)
    out: dict[str, Estimate] = {}
    with tempfile.TemporaryDirectory(prefix="mmrag-embed-bench-") as tmp:
        specs = model_specs(Path(tmp), args.models.split(","))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [str(Path(sys.executable).with_name("mmrag")), "embed-serve", "--host", "127.0.0.1", "--port",
               str(port), "--device", args.device, "--max-batch", str(args.batch),
               "--max-wait-ms", str(args.max_wait_ms), "--queue-size", "4096"]
        for spec in specs.values():
            cmd += ["--model", spec]
        server = start_server(cmd, f"{url}/health", lambda r: set(specs.values()) <= set(r.json()["models"]),
                              log=Path(tmp) / "server.log")
        try:
            for name, spec in specs.items():
                embedder = load_embedder(spec, EmbedderOptions(device=args.device))
                in_process_rate(embedder, pngs[:args.batch], args.batch)  # warm-up both arms
                service_rate(url, spec, pngs[:args.clients], args.clients)
                print(f"{name} ({spec.split('/')[-1] if name != 'vitb32' else spec}):", flush=True)
                rates = alternate(arms(embedder, spec, url, pngs, args), args.rounds)
                out[name] = interval(paired_ratios(rates["service"], rates["in-process"]))
                print(f"  in-process {np.median(rates['in-process']):.2f} items/s, service "
                      f"{np.median(rates['service']):.2f} items/s; ratio {out[name].value:.3f} "
                      f"[{out[name].lo:.3f}, {out[name].hi:.3f}]", flush=True)
                del embedder
            snap = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"]
            for name, spec in specs.items():
                print(f"  {name}: service batch sizes {snap[spec]['batch_size_histogram']}")
        finally:
            stop_server(server)
    return out


def index_sizes() -> None:
    from mmrag.embed.base import load_embedder
    from mmrag.embed.pooling import binary_quantise, bytes_per_page, hierarchical_pool, prefetch_vector
    from tests.fixtures.tiny_models import build_tiny_colqwen2

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        # vidore/colqwen2-v1.0's processor budget: max_pixels = 768 * 28 * 28
        path = build_tiny_colqwen2(Path(tmp) / "colqwen2", max_pixels=768 * 28 * 28)
        embedder = load_embedder(f"colpali:{path}")
        doc = embedder.embed(page_image(1275, 1650))  # letter page at 150 dpi
    n, dim = doc.shape
    rows = [("full float32", n, bytes_per_page(n, dim)),
            ("full float16", n, bytes_per_page(n, dim, "float16"))]
    for factor in (2, 3):
        pooled = hierarchical_pool(doc, factor).vectors
        rows.append((f"pooled x{factor} float32", len(pooled), pooled.astype(np.float32).nbytes))
    rows.append(("binary (1 bit/dim)", n, binary_quantise(doc).nbytes))
    rows.append(("prefetch vector float32", 1, prefetch_vector(doc).astype(np.float32).nbytes))
    print(f"\nindex size per page (ColQwen2 layout: {n} image tokens x {dim} dims, letter page 1275x1650)")
    print(f"| {'representation':<24} | {'rows':>5} | {'bytes/page':>10} |")
    for name, r, b in rows:
        print(f"| {name:<24} | {r:>5} | {b:>10} |")


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--quick", action="store_true", help="12 clients x 2 pages, batch 8 (minutes here)")
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--per-client", type=int, default=None, help="pages each client sends per round")
    parser.add_argument("--batch", type=int, default=None, help="max batch of the service = in-process batch")
    parser.add_argument("--max-wait-ms", type=float, default=0.0, help="the service's idle wait (its default: 0)")
    parser.add_argument("--rounds", type=int, default=5, help="ABBA-alternated in-process/service rounds")
    parser.add_argument("--models", default="colqwen2,clip,vitb32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-sizes", action="store_true", help="skip the index-size table")
    args = parser.parse_args()
    args.clients = args.clients or (12 if args.quick else 16)
    args.per_client = args.per_client or (2 if args.quick else 4)
    args.batch = args.batch or (8 if args.quick else 16)
    print(machine_line(), flush=True)
    if not args.skip_sizes:
        index_sizes()
        print()
    ratios = efficiency(args)
    worst = min(ratios, key=lambda k: ratios[k].value)
    print(machine_line())
    print(verdict(f"service_ratio ({worst})", ratios[worst], 0.90, at_least=True))
    print(result_line({"service_ratio": ratios[worst], **{f"service_ratio_{k}": v for k, v in ratios.items()}}))


if __name__ == "__main__":
    main()
