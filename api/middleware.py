"""The request middleware: a request id (from ``X-Request-ID`` or new, returned in the response),
the request body limit, per-route request metrics and one log line per request (never the key, a
body or document text)."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import error_response
from api.observability import REQUEST_ID, Metrics
from mmrag.errors import TooLarge

log = logging.getLogger("mmrag.api.request")
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def route_template(scope: Scope) -> str:
    """``/corpora/{corpus}/search`` rather than the path, so labels stay few; unmatched paths share one."""
    route: Any = scope.get("route")
    return str(getattr(route, "path", "unmatched"))


class RequestMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, max_body_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get("x-request-id", "")
        request_id = given if REQUEST_ID_PATTERN.match(given) else uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                MutableHeaders(scope=message)["X-Request-ID"] = request_id
            await send(message)

        try:
            await self._limited(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route = route_template(scope)
            self.metrics.observe_request(scope["method"], route, status, seconds)
            principal = scope.get("state", {}).get("principal")
            key_id = getattr(principal, "id", None)
            log.info("%s %s %s %.1fms", scope["method"], route, status, seconds * 1000,
                     extra={"method": scope["method"], "route": route, "status": status,
                            "duration_ms": round(seconds * 1000, 2), "key_id": key_id,
                            "request_id": request_id})
            REQUEST_ID.reset(token)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a body over the limit before reading it (Content-Length), or as soon as it passes
        the limit (chunked): 413 with our error body, before any parsing."""
        limit = self.max_body_bytes
        error = TooLarge(f"the request body is larger than the limit of {limit:,} bytes (MMRAG_API__MAX_REQUEST_BYTES)")
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await error_response(error)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise error  # inside the app: its error handler answers 413
            return message

        await self.app(scope, counted, send)
