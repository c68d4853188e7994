"""The embedding service over HTTP: routes in front of :class:`mmrag.embed.service.EmbedService`.

``create_embed_app(specs, options, batching)`` returns a FastAPI app whose service loads the models
at start-up (a model that cannot load is listed under ``failed`` in ``/health``, the rest serve)
and puts one :class:`~mmrag.embed.batching.DynamicBatcher` in front of each. This module only
parses requests and shapes responses; what is embedded or refused is decided by the service.

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

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import numpy as np
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ValidationError

from api.errors import install_error_handlers, responses
from mmrag.embed.base import EmbedderOptions, Kind
from mmrag.embed.service import EmbedService, prometheus_text
from mmrag.embed.wire import CONTENT_TYPE, encode_vectors
from mmrag.embed_service_config import BatchingConfig, InputLimits
from mmrag.errors import InvalidInput, UnsupportedMediaType
from mmrag.process_memory import hand_back_memory

EncodingFormat = Literal["float", "base64", "binary"]


class TextRequest(BaseModel):
    model: str
    input: str | list[Any]
    kind: Kind = "document"
    encoding_format: EncodingFormat | None = None
    dtype: Literal["float32", "float16"] = "float32"


def vectors_response(spec: str, vectors: list[np.ndarray], multivector: bool, req: TextRequest) -> Response:
    """JSON (OpenAI shape) for dense vectors, the binary form for multi-vectors or when asked.

    The service does not count tokens: ``usage`` is reported as zeros.
    """
    fmt = req.encoding_format or ("binary" if multivector else "float")
    if fmt == "binary":
        return Response(encode_vectors(vectors, multivector=multivector, dtype=req.dtype), media_type=CONTENT_TYPE)
    if multivector:
        raise InvalidInput(f"{spec} returns multi-vectors; allowed encoding_format: binary ({CONTENT_TYPE})")

    def encode(v: np.ndarray) -> np.ndarray | str:
        v = np.ascontiguousarray(v, dtype=np.float32)
        return v if fmt == "float" else base64.b64encode(v.astype("<f4").tobytes()).decode()

    data = [{"object": "embedding", "index": i, "embedding": encode(v)} for i, v in enumerate(vectors)]
    body: dict[str, Any] = {"object": "list", "data": data, "model": spec,
                            "usage": {"prompt_tokens": 0, "total_tokens": 0}}
    # orjson writes float32 arrays natively (shortest float32 digits): ~30x faster than json.dumps of lists
    return Response(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


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
                     batching: BatchingConfig | None = None, limits: InputLimits | None = None,
                     memory: tuple[int, float] | None = None) -> FastAPI:
    """Build the service app; models load when the app starts (lifespan), not here. ``memory``: the malloc
    arenas and the seconds between trims with which the process hands freed memory back, set up as the app
    starts, before the batchers' threads (:func:`mmrag.process_memory.hand_back_memory`; None: left as it is)."""
    service = EmbedService(specs, options or EmbedderOptions(), batching or BatchingConfig(),
                           limits or InputLimits())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.trimmer = hand_back_memory(*memory) if memory is not None else None
        await service.start()
        try:
            yield
        finally:
            await service.stop()
            if app.state.trimmer is not None:
                app.state.trimmer.close()

    app = FastAPI(title="mmrag embedding service", lifespan=lifespan)
    app.state.service = service

    install_error_handlers(app)  # status codes: api/errors.py; Overloaded -> 429 + Retry-After

    @app.post("/v1/embeddings", openapi_extra=TEXT_OPENAPI, responses=VECTOR_RESPONSES)
    async def embed_texts(request: Request) -> Response:
        try:
            req = TextRequest.model_validate(orjson.loads(await request.body()))
        except ValidationError as exc:
            raise InvalidInput(f"bad request: {_pydantic_message(exc)}") from exc
        except orjson.JSONDecodeError as exc:
            raise InvalidInput(f"body is not JSON: {exc}") from exc
        texts = [req.input] if isinstance(req.input, str) else req.input
        vectors = await service.embed_texts(req.model, texts, req.kind)
        return vectors_response(req.model, vectors, service.multivector(req.model), req)

    @app.post("/v1/embeddings/images", openapi_extra=IMAGE_OPENAPI, responses=VECTOR_RESPONSES)
    async def embed_images(request: Request) -> Response:
        fields, blobs = await _image_inputs(request, service.limits)
        req = _parse_image_fields(fields)
        vectors = await service.embed_images(req.model, blobs, req.kind)
        return vectors_response(req.model, vectors, service.multivector(req.model), req)

    @app.get("/health")
    async def health() -> JSONResponse:
        body = service.health()
        return JSONResponse(body, status_code=503 if body["status"] == "down" else 200)

    @app.get("/metrics")
    async def metrics(format: Literal["prometheus", "json"] = "prometheus") -> Response:
        snap = service.snapshots()
        if format == "json":
            return JSONResponse({"models": snap})
        return PlainTextResponse(prometheus_text(snap), media_type="text/plain; version=0.0.4")

    return app
