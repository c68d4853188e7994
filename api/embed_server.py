"""The embedding service: the embedders of ``mmrag.embed`` behind HTTP, with dynamic batching.

``create_embed_app(specs, options, batching)`` returns a FastAPI app that loads the models at
start-up (a model that cannot load is listed under ``failed`` in ``/health``, the rest serve)
and puts one :class:`~mmrag.embed.batching.DynamicBatcher` in front of each.

Endpoints
- ``POST /v1/embeddings`` — OpenAI-style text: ``{"model", "input": str | [str], "kind"?,
  "encoding_format"?: float | base64 | binary, "dtype"?: float32 | float16}``.
- ``POST /v1/embeddings/images`` — multipart (``model``, ``kind``, ``encoding_format``, ``dtype``
  fields; one or more ``image`` files) or JSON (``"input": [base64 image bytes]``).
- ``GET /health`` — loaded models (dim, multivector, modalities, max_batch) and failed ones with reasons.
- ``GET /metrics`` — Prometheus text (``?format=json`` for JSON): queue depth, batch size histogram, items/s.

Multi-vectors (and anything with ``encoding_format=binary``) come back as
``application/x-mmrag-vectors`` (see ``mmrag.embed.wire``). Errors are JSON
``{"error": code, "message": ...}`` with the status codes of ``api/errors.py`` (400 bad input,
413 too large, 415 media type, 422 corrupt image, 404 unknown model, 503 model not loaded);
a full queue answers 429 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field, ValidationError

from api.errors import install_error_handlers, responses
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind, load_embedder
from mmrag.embed.batching import BatchingConfig, DynamicBatcher
from mmrag.embed.wire import CONTENT_TYPE, check_text, decode_image, encode_vectors
from mmrag.errors import (
    InvalidInput,
    MMRAGError,
    NotFound,
    TooLarge,
    Unavailable,
    UnsupportedMediaType,
)
from mmrag.types import Modality

log = logging.getLogger(__name__)
EncodingFormat = Literal["float", "base64", "binary"]


class InputLimits(BaseModel):
    """What one request may carry."""

    max_items: int = Field(default=256, ge=1)
    """Most inputs in one request."""
    max_text_chars: int = Field(default=20_000, ge=1)
    """Longest text input."""
    max_image_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Largest encoded image."""
    max_image_pixels: int = Field(default=40_000_000, ge=1)
    """Largest decoded image (width x height): decompression-bomb guard."""


class TextRequest(BaseModel):
    model: str
    input: str | list[Any]
    kind: Kind = "document"
    encoding_format: EncodingFormat | None = None
    dtype: Literal["float32", "float16"] = "float32"


class EmbedService:
    """Lifecycle: ``start()`` loads every spec (failures recorded, not raised) and starts the
    batchers; ``embed(spec, items, kind)`` serves requests; ``stop()`` stops the batchers."""

    def __init__(self, specs: Sequence[str], options: EmbedderOptions, batching: BatchingConfig,
                 limits: InputLimits) -> None:
        self.specs, self.options, self.batching, self.limits = list(specs), options, batching, limits
        self.batchers: dict[str, DynamicBatcher] = {}
        self.failed: dict[str, str] = {}

    async def start(self) -> None:
        for spec in self.specs:
            try:
                embedder = await asyncio.to_thread(load_embedder, spec, self.options)
            except MMRAGError as exc:
                log.warning("embedding model %s not loaded: %s", spec, exc.message)
                self.failed[spec] = exc.message
                continue
            batcher = DynamicBatcher(embedder, self.batching)
            await batcher.start()
            self.batchers[spec] = batcher

    async def stop(self) -> None:
        for batcher in self.batchers.values():
            await batcher.stop()

    def batcher(self, spec: str) -> DynamicBatcher:
        if spec in self.failed:
            raise Unavailable(f"model {spec!r} failed to load: {self.failed[spec]}")
        if spec not in self.batchers:
            raise NotFound(f"unknown model {spec!r}; served: {', '.join(self.batchers) or 'none'}")
        return self.batchers[spec]

    def health(self) -> dict[str, Any]:
        models = {spec: _describe(b.embedder, b.max_batch) for spec, b in self.batchers.items()}
        status = "ok" if not self.failed else ("degraded" if models else "down")
        return {"status": status, "models": models, "failed": self.failed,
                "max_items_per_request": min(self.limits.max_items, self.batching.queue_size)}


def _describe(embedder: Embedder, max_batch: int) -> dict[str, Any]:
    return {"dim": embedder.dim, "multivector": embedder.multivector, "max_batch": max_batch,
            "modalities": sorted(m.value for m in embedder.modalities)}


def _check_count(n: int, limits: InputLimits, batcher: DynamicBatcher) -> None:
    """A request must fit the limit and the model's whole queue (else it could never be admitted)."""
    most = min(limits.max_items, batcher.config.queue_size)
    if n == 0:
        raise InvalidInput(f"input is empty; allowed: 1..{most} items")
    if n > most:
        raise TooLarge(f"{n} inputs in one request; allowed at most {most}")


def _check_modality(batcher: DynamicBatcher, modality: Modality) -> None:
    if modality not in batcher.embedder.modalities:
        allowed = ", ".join(sorted(m.value for m in batcher.embedder.modalities))
        spec = batcher.embedder.spec
        raise InvalidInput(f"model {spec!r} does not embed {modality.value} (it takes: {allowed})")


def vectors_response(spec: str, vectors: list[np.ndarray], multivector: bool, req: TextRequest) -> Response:
    """JSON (OpenAI shape) for dense vectors, the binary form for multi-vectors or when asked.

    The service does not count tokens: ``usage`` is reported as zeros.
    """
    fmt = req.encoding_format or ("binary" if multivector else "float")
    if fmt == "binary":
        body = encode_vectors(vectors, multivector=multivector, dtype=req.dtype)
        return Response(body, media_type=CONTENT_TYPE)
    if multivector:
        raise InvalidInput(f"{spec} returns multi-vectors; allowed encoding_format: binary ({CONTENT_TYPE})")

    def encode(v: np.ndarray) -> list[float] | str:
        return v.tolist() if fmt == "float" else base64.b64encode(v.astype("<f4").tobytes()).decode()

    data = [{"object": "embedding", "index": i, "embedding": encode(v)} for i, v in enumerate(vectors)]
    return JSONResponse({"object": "list", "data": data, "model": spec,
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}})


async def _image_inputs(request: Request, limits: InputLimits) -> tuple[dict[str, Any], list[bytes]]:
    """Fields and raw image bytes of a multipart or JSON image request."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "multipart/form-data":
        form = await request.form(max_files=limits.max_items, max_fields=16)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        blobs = []
        for upload in form.getlist("image"):
            if isinstance(upload, str):
                raise InvalidInput("field 'image' must be a file upload")
            part_type = (upload.content_type or "application/octet-stream").lower()
            if not (part_type.startswith("image/") or part_type == "application/octet-stream"):
                raise UnsupportedMediaType(f"image part {upload.filename!r} has content type {part_type!r}; "
                                           "allowed: image/* or application/octet-stream")
            blobs.append(await upload.read())
        return fields, blobs
    if ctype == "application/json":
        try:
            body = await request.json()
        except ValueError as exc:
            raise InvalidInput(f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict) or not isinstance(body.get("input"), list):
            raise InvalidInput("JSON image request needs {'model': ..., 'input': [base64 images]}")
        try:
            blobs = [base64.b64decode(s, validate=True) for s in body["input"]]
        except (binascii.Error, TypeError, ValueError) as exc:
            raise InvalidInput(f"input must be a list of base64 strings: {exc}") from exc
        return {k: v for k, v in body.items() if k != "input"}, blobs
    raise UnsupportedMediaType(f"content type {ctype or 'none'!r}; allowed: multipart/form-data "
                               "(files named 'image') or application/json (base64 'input')")


def _parse_image_fields(fields: dict[str, Any]) -> TextRequest:
    try:
        return TextRequest.model_validate({**fields, "input": []})
    except ValidationError as exc:
        raise InvalidInput(f"bad image request fields: {_pydantic_message(exc)}") from exc


def _pydantic_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


_BINARY = {"schema": {"type": "string", "format": "binary",
                      "description": "header + shapes + little-endian float rows (mmrag.embed.wire)"}}
TEXT_OPENAPI: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": TextRequest.model_json_schema()}}}}
IMAGE_OPENAPI: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["model", "image"], "properties": {
        "model": {"type": "string"}, "kind": {"type": "string", "enum": ["query", "document"]},
        "encoding_format": {"type": "string", "enum": ["float", "base64", "binary"]},
        "dtype": {"type": "string", "enum": ["float32", "float16"]},
        "image": {"type": "array", "items": {"type": "string", "format": "binary"}}}}},
    "application/json": {"schema": {"type": "object", "required": ["model", "input"], "properties": {
        "model": {"type": "string"},
        "input": {"type": "array", "items": {"type": "string", "format": "byte"}},
        "kind": {"type": "string"}, "encoding_format": {"type": "string"}, "dtype": {"type": "string"}}}}}}}
VECTOR_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "OpenAI-style JSON for dense vectors; application/x-mmrag-vectors for multi-vectors "
                         "or encoding_format=binary", "content": {CONTENT_TYPE: _BINARY}},
    **responses(400, 404, 413, 415, 422, 429, 503)}


def create_embed_app(specs: Sequence[str], options: EmbedderOptions | None = None,
                     batching: BatchingConfig | None = None, limits: InputLimits | None = None) -> FastAPI:
    """Build the service app; models load when the app starts (lifespan), not here."""
    service = EmbedService(specs, options or EmbedderOptions(), batching or BatchingConfig(),
                           limits or InputLimits())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        yield
        await service.stop()

    app = FastAPI(title="mmrag embedding service", lifespan=lifespan)
    app.state.service = service

    install_error_handlers(app)  # status codes: api/errors.py; Overloaded -> 429 + Retry-After

    @app.post("/v1/embeddings", openapi_extra=TEXT_OPENAPI, responses=VECTOR_RESPONSES)
    async def embed_texts(request: Request) -> Response:
        try:
            req = TextRequest.model_validate(await request.json())
        except ValidationError as exc:
            raise InvalidInput(f"bad request: {_pydantic_message(exc)}") from exc
        except ValueError as exc:
            raise InvalidInput(f"body is not JSON: {exc}") from exc
        texts = [req.input] if isinstance(req.input, str) else req.input
        batcher = service.batcher(req.model)
        _check_modality(batcher, Modality.TEXT)
        _check_count(len(texts), service.limits, batcher)
        max_chars = service.limits.max_text_chars
        items: list[Item] = [check_text(t, i, max_chars=max_chars) for i, t in enumerate(texts)]
        vectors = await batcher.submit(items, req.kind)
        return vectors_response(req.model, vectors, batcher.embedder.multivector, req)

    @app.post("/v1/embeddings/images", openapi_extra=IMAGE_OPENAPI, responses=VECTOR_RESPONSES)
    async def embed_images(request: Request) -> Response:
        fields, blobs = await _image_inputs(request, service.limits)
        req = _parse_image_fields(fields)
        batcher = service.batcher(req.model)
        _check_modality(batcher, Modality.IMAGE)
        _check_count(len(blobs), service.limits, batcher)
        lim = service.limits
        images: list[Item] = []
        for i, blob in enumerate(blobs):
            try:
                images.append(await asyncio.to_thread(decode_image, blob, max_bytes=lim.max_image_bytes,
                                                      max_pixels=lim.max_image_pixels))
            except MMRAGError as exc:
                exc.message = f"image {i}: {exc.message}"
                raise
        vectors = await batcher.submit(images, req.kind)
        return vectors_response(req.model, vectors, batcher.embedder.multivector, req)

    @app.get("/health")
    async def health() -> JSONResponse:
        body = service.health()
        return JSONResponse(body, status_code=503 if body["status"] == "down" else 200)

    @app.get("/metrics")
    async def metrics(format: Literal["prometheus", "json"] = "prometheus") -> Response:
        snap = {spec: b.snapshot() for spec, b in service.batchers.items()}
        if format == "json":
            return JSONResponse({"models": snap})
        return PlainTextResponse(prometheus_text(snap), media_type="text/plain; version=0.0.4")

    return app


def prometheus_text(snapshots: dict[str, dict[str, Any]]) -> str:
    """Prometheus exposition of the batcher snapshots (one label set per model)."""
    lines = []
    for spec, snap in snapshots.items():
        label = f'model="{spec}"'
        for key in ("queue_depth", "items_per_s"):
            lines.append(f"mmrag_embed_{key}{{{label}}} {snap[key]}")
        for key in ("items_total", "batches_total", "rejected_total", "failed_items_total",
                    "forward_seconds_total"):
            lines.append(f"mmrag_embed_{key}{{{label}}} {snap[key]}")
        cumulative = 0
        hist = snap["batch_size_histogram"]
        for le in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]:
            cumulative = sum(n for size, n in hist.items() if size <= le)
            lines.append(f'mmrag_embed_batch_size_bucket{{{label},le="{le}"}} {cumulative}')
        lines.append(f'mmrag_embed_batch_size_bucket{{{label},le="+Inf"}} {sum(hist.values())}')
        lines.append(f"mmrag_embed_batch_size_sum{{{label}}} {sum(s * n for s, n in hist.items())}")
        lines.append(f"mmrag_embed_batch_size_count{{{label}}} {sum(hist.values())}")
    return "\n".join(lines) + "\n"
