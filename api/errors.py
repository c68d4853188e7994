"""The only place where mmrag errors become HTTP status codes, in our body (:class:`api.schemas.ErrorBody`)
or, on the OpenAI-compatible routes under ``/v1/``, in OpenAI's (``{"error": {message, type, param, code}}``)."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from api.openai_schemas import error_body
from api.schemas import ErrorBody
from mmrag import errors
from mmrag.disk_space import disk_full, no_space

log = logging.getLogger(__name__)

OPENAI_ROUTES = ("/v1/chat/", "/v1/models")  # the query API's OpenAI-compatible routes, errors included (the
# embedding service's /v1/embeddings keeps our error body: docs/embedding.md)
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "invalid_request_error", 413: "invalid_request_error", 415: "invalid_request_error",
                422: "invalid_request_error", 429: "rate_limit_error"}
OPENAI_CODES = {401: "invalid_api_key", 403: "insufficient_permissions", 413: "request_too_large",
                429: "rate_limit_exceeded", 503: "service_unavailable"}

STATUS: list[tuple[type[errors.MMRAGError], int]] = [
    (errors.UnsupportedMediaType, 415),
    (errors.CorruptDocument, 422),
    (errors.TooComplex, 422),
    (errors.TooLarge, 413),
    (errors.InvalidInput, 400),
    (errors.NotFound, 404),
    (errors.Unauthorized, 401),
    (errors.Forbidden, 403),
    (errors.Conflict, 409),
    (errors.Overloaded, 429),
    (errors.Unavailable, 503),
    (errors.NoSpace, 507),
]


def status_of(exc: errors.MMRAGError) -> int:
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)


def error_payload(exc: errors.MMRAGError) -> dict[str, Any]:
    return {"error": exc.code, "message": exc.message, "detail": exc.detail}


def speaks_openai(path: str) -> bool:
    return path.startswith(OPENAI_ROUTES)


def openai_payload(status: int, message: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """OpenAI's error body: ``type`` from the status, ``param`` and ``code`` from the error's detail when
    it names them (e.g. ``model`` / ``model_not_found``)."""
    detail = detail or {}
    param, code = detail.get("param"), detail.get("code", OPENAI_CODES.get(status))
    kind = OPENAI_TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return error_body(message, kind, param, code)


def error_response(exc: errors.MMRAGError, path: str = "") -> JSONResponse:
    headers = {}
    if isinstance(exc, errors.Overloaded):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    if isinstance(exc, errors.Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    status = status_of(exc)
    body = openai_payload(status, exc.message, exc.detail) if speaks_openai(path) else error_payload(exc)
    return JSONResponse(body, status_code=status, headers=headers)


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entry documenting error bodies."""
    text = {400: "Invalid request", 401: "No API key, or an unknown or revoked one",
            403: "The API key's scope does not allow this",
            404: "Unknown corpus, document or page", 409: "Conflict with existing state",
            413: "Too large", 415: "Unsupported media type", 422: "Corrupt input or invalid parameters",
            429: "Overloaded, retry after Retry-After seconds", 503: "A component is unavailable",
            507: "No space left on the data folder's disk (nothing stored before is lost; send it again once "
                 "space is freed)"}
    return {c: {"model": ErrorBody, "description": text.get(c, "Error")} for c in codes}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(errors.MMRAGError)
    async def _mmrag(request: Request, exc: errors.MMRAGError) -> JSONResponse:
        return error_response(exc, request.url.path)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        """A write that met a full disk anywhere (SQLite, the store, a file) is a 507 saying so; any other
        fault is a 500 whose details stay in the log."""
        if disk_full(exc):
            return error_response(no_space(f"{request.method} {request.url.path}"), request.url.path)
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": "internal_error", "message": "internal error", "detail": {}}, status_code=500)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()]
        if speaks_openai(request.url.path):  # OpenAI answers an invalid request with 400 and the field's path
            first = exc.errors()[0].get("loc", ()) if exc.errors() else ()
            param = ".".join(str(p) for p in first[1:]) or None  # without the leading "body"
            return JSONResponse(openai_payload(400, "; ".join(problems), {"param": param, "code": "invalid_value"}),
                                status_code=400)
        return JSONResponse({"error": "invalid_request", "message": "; ".join(problems),
                             "detail": {"errors": jsonable(exc.errors())}}, status_code=422)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        """Starlette's own refusals (unknown path, wrong method, unreadable or too large body) in our body."""
        code, message = HTTP_CODES.get(exc.status_code, ("error", str(exc.detail)))
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
            message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        elif exc.status_code == 400:
            message = f"the request body could not be read: {exc.detail}"
        body = openai_payload(exc.status_code, message) if speaks_openai(request.url.path) else {
            "error": code, "message": message, "detail": {}}
        return JSONResponse(body, status_code=exc.status_code, headers=headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of this path answers (Starlette's own Allow names only the first route's)."""
    from fastapi.routing import iter_route_contexts
    from starlette.routing import Match

    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        match, _ = route.original_route.matches({**request.scope, "method": "__none__"})
        if match == Match.PARTIAL and route.methods:
            methods |= set(route.methods)
    return sorted(methods)


HTTP_CODES: dict[int, tuple[str, str]] = {
    400: ("invalid_request", "the request could not be read"),
    404: ("not_found", "no such path; see /docs for the routes"),
    405: ("method_not_allowed", "method not allowed"),
}


def jsonable(value: Any) -> Any:
    from fastapi.encoders import jsonable_encoder

    try:
        return jsonable_encoder(value)
    except Exception:
        return str(value)
