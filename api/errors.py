"""The only place where mmrag errors become HTTP status codes."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mmrag import errors

STATUS: list[tuple[type[errors.MMRAGError], int]] = [
    (errors.UnsupportedMediaType, 415),
    (errors.CorruptDocument, 422),
    (errors.TooLarge, 413),
    (errors.InvalidInput, 400),
    (errors.NotFound, 404),
    (errors.Conflict, 409),
    (errors.Overloaded, 429),
    (errors.Unavailable, 503),
]


class ErrorBody(BaseModel):
    """Every error response has this shape."""

    error: str  # stable code, e.g. not_found, too_large
    message: str  # what was wrong and what is allowed
    detail: dict[str, Any] = {}


def status_of(exc: errors.MMRAGError) -> int:
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)


def error_payload(exc: errors.MMRAGError) -> dict[str, Any]:
    return {"error": exc.code, "message": exc.message, "detail": exc.detail}


def error_response(exc: errors.MMRAGError) -> JSONResponse:
    headers = {}
    if isinstance(exc, errors.Overloaded):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return JSONResponse(error_payload(exc), status_code=status_of(exc), headers=headers)


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entry documenting error bodies."""
    text = {400: "Invalid request", 404: "Unknown corpus, document or page", 409: "Conflict with existing state",
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


def jsonable(value: Any) -> Any:
    from fastapi.encoders import jsonable_encoder

    try:
        return jsonable_encoder(value)
    except Exception:
        return str(value)
