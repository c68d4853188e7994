"""``mmrag embed-serve``: run the embedding service (its own process, so embedding GPUs scale
separately from the API). The lead registers :func:`embed_serve` on the typer root."""

from __future__ import annotations

from typing import Annotated

import typer

DEFAULT_MODELS = ["open_clip:ViT-B-32/laion2b_s34b_b79k", "hf:vidore/colqwen2-v1.0-hf"]
DEFAULT_PORT = 8002


def embed_serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind (8001 is the vLLM default).")] = DEFAULT_PORT,
    model: Annotated[list[str] | None, typer.Option(
        help=f"Embedder spec to serve; repeat for several (default: {', '.join(DEFAULT_MODELS)}).")] = None,
    max_batch: Annotated[int | None, typer.Option(
        help="Most items in one forward pass (default MMRAG_EMBED_SERVICE__BATCHING__MAX_BATCH).")] = None,
    max_wait_ms: Annotated[float | None, typer.Option(
        help="Longest an item waits for its batch to fill while the model is idle (0: none; default "
             "MMRAG_EMBED_SERVICE__BATCHING__MAX_WAIT_MS).")] = None,
    queue_size: Annotated[int | None, typer.Option(
        help="Most queued items per model before 429 (default MMRAG_EMBED_SERVICE__BATCHING__QUEUE_SIZE).")] = None,
    torch_threads: Annotated[int | None, typer.Option(
        help="torch threads of the forward pass; 0: chosen per batch size by measurement (default "
             "MMRAG_EMBED_SERVICE__BATCHING__TORCH_THREADS).")] = None,
    device: Annotated[str, typer.Option(help="auto (cuda if available), cpu, cuda:1, ...")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto (fp32 CPU, bf16/fp16 GPU), float16, bfloat16")] = "auto",
    text_precision: Annotated[str | None, typer.Option(
        help="st: text models: auto (by the CPU), float32, int8 or bf16 "
             "(default: MMRAG_EMBED__TEXT_PRECISION).")] = None,
) -> None:
    """Serve embedders over HTTP with dynamic batching; models that cannot load are reported in /health."""
    import uvicorn

    from api.embed_server import create_embed_app
    from mmrag.config import load_settings, merge_settings
    from mmrag.cpu_kernels import kernels_here
    from mmrag.embed.base import EmbedderOptions, register_backends
    from mmrag.errors import InvalidInput
    from mmrag.hub import go_offline_if_unreachable

    if text_precision is not None:
        try:  # an unknown value, or bf16 on a CPU without native bfloat16: refused before any model loads
            kernels_here(text_precision, device)
        except InvalidInput as exc:
            raise typer.BadParameter(exc.message, param_hint="--text-precision") from None
    flags = {"max_batch": max_batch, "max_wait_ms": max_wait_ms, "queue_size": queue_size,
             "torch_threads": torch_threads}
    settings = merge_settings(load_settings(), {"embed_service": {"batching": {
        k: v for k, v in flags.items() if v is not None}}})  # the flags given override the settings
    register_backends(settings.embed.backends)  # extra backends (MMRAG_EMBED__BACKENDS)
    go_offline_if_unreachable()  # the models load at start-up: do not spend the hub's retries on each

    service = settings.embed_service
    options = EmbedderOptions(device=device, dtype=dtype,
                              text_precision=text_precision or settings.embed.text_precision,
                              max_batch_tokens=settings.embed.max_batch_tokens)
    app = create_embed_app(model or DEFAULT_MODELS, options, service.batching, service.limits,
                           memory=(settings.api.malloc_arenas, settings.api.malloc_trim_s))
    uvicorn.run(app, host=host, port=port, log_level="info")
