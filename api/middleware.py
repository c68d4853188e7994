"""The request middlewares.

:class:`RequestMiddleware` (outermost): a request id (from ``X-Request-ID`` or new, returned in the
response), per-route request metrics and one log line per request (never the key, a body or document
text). :class:`GateMiddleware` (inside it): the route's key check and its body limit, both **before
a byte of the body is read**, so an unauthenticated or oversized request costs nothing: the route
is matched from the path, its declared scope (``api.auth.require``) checked on the headers (401,
429; 403/404 for a corpus in the path the key does not have), the principal kept for the route's
own dependency, then the body counted against the route's limit (``api.limits.body_limit``: 413)."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.auth import PUBLIC, route_requirement
from api.errors import error_response
from api.limits import body_limit
from api.observability import REQUEST_ID, Metrics
from mmrag.config import Settings
from mmrag.errors import MMRAGError, TooLarge
from mmrag.keys import SCOPES

log = logging.getLogger("mmrag.api.request")
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def route_template(scope: Scope) -> str:
    """``/corpora/{corpus}/search`` rather than the path, so labels stay few; unmatched paths share one."""
    route: Any = scope.get("route")
    return str(getattr(route, "path", "unmatched"))


class RequestMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

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
            await self.app(scope, receive, send_with_id)
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


class GateMiddleware:
    """Lifecycle: one per app; reads the app's routes and its ``AuthGate`` (``app.state.auth``) per request."""

    def __init__(self, app: ASGIApp, api: Any, settings: Settings) -> None:
        self.app, self.api, self.settings = app, api, settings
        self._needs: dict[int, str] = {}  # id(route) -> what it requires (api.auth.route_scopes)

    def _route(self, scope: Scope) -> tuple[str, str, dict[str, Any]]:
        """(path template, what the route requires, path params) of the route the request matches."""
        for context in iter_route_contexts(self.api.routes):
            route = context.original_route
            match, child = route.matches(scope)
            if match == Match.FULL:
                needs = self._needs.get(id(route))
                if needs is None:
                    needs = self._needs[id(route)] = route_requirement(route)
                path = re.sub(r"\{(\w+):\w+\}", r"{\1}", str(context.path))
                return path, needs, dict(child.get("path_params", {}))
        return "unmatched", PUBLIC, {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, needs, params = self._route(scope)
        try:
            if needs != PUBLIC:
                principal = self.api.state.auth.principal(Request(scope))  # headers only: 401, 429
                if needs in SCOPES:
                    corpus = params.get("corpus")
                    principal.check(needs, corpus, f"unknown corpus {corpus!r}")  # 403, 404
                scope.setdefault("state", {})["principal"] = principal
            limit, setting = body_limit(scope["method"], path, self.settings)
        except MMRAGError as exc:
            await error_response(exc, scope["path"])(scope, receive, send)
            return
        await self._limited(scope, receive, send, limit, setting)

    async def _limited(self, scope: Scope, receive: Receive, send: Send, limit: int, setting: str) -> None:
        """Refuse a body over the limit before reading it (Content-Length), or as soon as it passes
        the limit (chunked): 413 with our error body, before any parsing."""
        error = TooLarge(f"the request body is larger than this route's limit of {limit:,} bytes ({setting})",
                         detail={"limit": setting})
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await error_response(error, scope["path"])(scope, receive, send)
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
