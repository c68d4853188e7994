"""Embedding service efficiency and multi-vector index size.

    python -m bench.embed_service --quick

1. Service efficiency: a random-weight open_clip ViT-B-32 (real architecture, ``pretrained=None``;
   compute dominates) is measured side by side (a) in-process, ``embed_batch`` of ``--batch``
   images back to back, and (b) through the real HTTP service (uvicorn subprocess on 127.0.0.1,
   ``max_batch = --batch``) with ``--clients`` concurrent clients each sending one image at a time
   (multipart PNG, each waiting for its answer). The two sides alternate in rounds of the same
   number of items, so background load hits both alike;
   ``service_ratio = service items/s / in-process items/s`` over all rounds.
2. Index size per page: a tiny random ColQwen2 (colpali-engine, real 128-dim output) with the
   real processor's pixel budget embeds a letter-size page; bytes for full float32/float16,
   hierarchical pooling (factors 2, 3), binary quantisation and the pooled prefetch vector.

Ends with ``RESULT service_ratio=<float>``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

SPEC = "open_clip:ViT-B-32/none"
SERVER = """
import sys, uvicorn
from api.embed_server import create_embed_app
from mmrag.embed.base import EmbedderOptions
from mmrag.embed.batching import BatchingConfig
batching = BatchingConfig(max_batch=int(sys.argv[3]), max_wait_ms=float(sys.argv[4]), queue_size=1024)
app = create_embed_app([sys.argv[1]], EmbedderOptions(device="auto"), batching)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def page_image(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def in_process_time(embedder: object, images: list[Image.Image], batches: int) -> float:
    """Seconds for ``batches`` back-to-back ``embed_batch`` calls on one full batch."""
    start = time.perf_counter()
    for _ in range(batches):
        embedder.embed_batch(images)  # type: ignore[attr-defined]
    return time.perf_counter() - start


async def service_time(url: str, png: bytes, clients: int, per_client: int) -> tuple[float, int]:
    """Seconds for ``clients`` concurrent clients to each send ``per_client`` one-image requests
    (each waits for its answer before sending the next); and the number of failed requests."""
    errors = 0

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal errors
        for _ in range(per_client):
            r = await http.post("/v1/embeddings/images", data={"model": SPEC, "encoding_format": "binary"},
                                files=[("image", ("page.png", png, "image/png"))])
            errors += r.status_code != 200

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(client(http) for _ in range(clients)))
        return time.perf_counter() - start, errors


def start_server(port: int, batch: int, max_wait_ms: float) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, SPEC, str(port), str(batch), str(max_wait_ms)],
                            cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if SPEC in httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json().get("models", {}):
                return proc
        except (httpx.HTTPError, ValueError):
            pass
        if proc.poll() is not None:
            raise RuntimeError("embedding service exited during start-up")
        time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("embedding service did not start")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(*pids: int) -> float:
    """User + system CPU seconds used so far by these processes."""
    import psutil

    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


def efficiency(args: argparse.Namespace) -> float:
    """Interleaved rounds of in-process and service work of the same size; the ratio of rates.

    Also prints the ratio of items per CPU-second (server + clients vs in-process): on a shared
    machine the wall-clock ratio moves with other processes' load, the CPU cost much less.
    """
    from mmrag.embed.base import EmbedderOptions, load_embedder
    from mmrag.embed.client import png_bytes

    image = page_image(224, 224)
    embedder = load_embedder(SPEC, EmbedderOptions(device="auto"))
    batch = [image.copy() for _ in range(args.batch)]
    png, port = png_bytes(image), free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port, args.batch, args.max_wait_ms)
    wall = {"local": 0.0, "served": 0.0}
    cpu = {"local": 0.0, "served": 0.0}
    me = os.getpid()
    try:
        in_process_time(embedder, batch, 1)  # warm-up both sides
        asyncio.run(service_time(url, png, args.clients, 1))
        for r in range(args.rounds):
            mine0 = cpu_seconds(me)
            t_local = in_process_time(embedder, batch, args.batches)
            mine1, theirs1 = cpu_seconds(me), cpu_seconds(server.pid)
            t_served, errors = asyncio.run(service_time(url, png, args.clients, args.batches))
            cpu["local"] += mine1 - mine0
            cpu["served"] += cpu_seconds(me) - mine1 + cpu_seconds(server.pid) - theirs1
            wall["local"] += t_local
            wall["served"] += t_served
            n = args.batches * args.batch
            print(f"round {r + 1}: in-process {n / t_local:.2f} items/s | service {n / t_served:.2f} items/s "
                  f"({args.clients} clients, errors={errors})", flush=True)
        snap = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"][SPEC]
    finally:
        server.terminate()
        server.wait(timeout=30)
    n = args.rounds * args.batches * args.batch
    print(f"in-process batch={args.batch}: {n / wall['local']:.2f} items/s, "
          f"{n / cpu['local']:.3f} items/cpu-s")
    print(f"service {args.clients} clients: {n / wall['served']:.2f} items/s, "
          f"{n / cpu['served']:.3f} items/cpu-s; batch sizes {snap['batch_size_histogram']}")
    print(f"cpu_cost_ratio={cpu['local'] / cpu['served']:.3f} (items per CPU-second, service / in-process)")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (other processes share it)")
    return wall["local"] / wall["served"]


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
    parser.add_argument("--quick", action="store_true", help="2 rounds of 3 batches (under 3 minutes here)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--batch", type=int, default=16, help="max batch of the service = in-process batch")
    parser.add_argument("--max-wait-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved in-process/service rounds")
    parser.add_argument("--batches", type=int, default=None, help="batches per side per round")
    args = parser.parse_args()
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.batches = args.batches or (3 if args.quick else 8)
    index_sizes()
    print()
    ratio = efficiency(args)
    print(f"RESULT service_ratio={ratio:.3f}")


if __name__ == "__main__":
    main()
