"""The only place where mmrag errors become HTTP status codes."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from api.schemas import ErrorBody
from mmrag import errors

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
]


def status_of(exc: errors.MMRAGError) -> int:
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)


def error_payload(exc: errors.MMRAGError) -> dict[str, Any]:
    return {"error": exc.code, "message": exc.message, "detail": exc.detail}


def error_response(exc: errors.MMRAGError) -> JSONResponse:
    headers = {}
    if isinstance(exc, errors.Overloaded):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    if isinstance(exc, errors.Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_payload(exc), status_code=status_of(exc), headers=headers)


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entry documenting error bodies."""
    text = {400: "Invalid request", 401: "No API key, or an unknown or revoked one",
            403: "The API key's scope does not allow this",
            404: "Unknown corpus, document or page", 409: "Conflict with existing state",
            413: "Too large", 415: "Unsupported media type", 422: "Corrupt input or invalid parameters",
            429: "Overloaded, retry after Retry-After seconds", 503: "A component is unavailable"}
    return {c: {"model": ErrorBody, "description": text.get(c, "Error")} for c in codes}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(errors.MMRAGError)
    async def _mmrag(_: Request, exc: errors.MMRAGError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()]
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
        return JSONResponse({"error": code, "message": message, "detail": {}}, status_code=exc.status_code,
                            headers=headers)


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
