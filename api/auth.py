"""API keys on requests: ``Authorization: Bearer KEY`` -> a :class:`Principal`, checked per route.

Every route declares what it needs once, with ``dependencies=[require(...)]`` or a ``Principal``
parameter from :func:`require` (the aliases ``ReadDep``, ``WriteDep``, ... in :mod:`api.deps`). A
missing or unknown key is 401, a key without the scope 403, and another tenant's corpus (or its
documents, pages, jobs, evaluations) 404, so that a key never learns what exists outside its
corpus. The per-key request rate is enforced here too (429 + Retry-After).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import Any
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.routing import iter_route_contexts

from api.limits import JobQuota, RateLimiter
from mmrag.access import Principal
from mmrag.config import Settings
from mmrag.errors import Overloaded, Unauthorized
from mmrag.keys import KeyStore, Scope

log = logging.getLogger("mmrag.api.auth")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# headers a proxy adds: a request carrying one did not come from this machine's own client
_PROXY_HEADERS = frozenset({"forwarded", "via", "x-real-ip", "x-client-ip", "true-client-ip", "cf-connecting-ip",
                            "fastly-client-ip", "x-cluster-client-ip", "x-original-forwarded-for"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Starlette's in-process TestClient has no socket: peer "testclient", Host "testserver". No network peer can
# present these (uvicorn reports the socket's address; `mmrag serve` runs it without proxy headers).
_IN_PROCESS = ("testclient", "testserver")


def _host_name(host: str) -> str:
    """``localhost:8000`` -> ``localhost``; ``[::1]:8000`` -> ``::1``."""
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def not_local(request: Request) -> str | None:
    """Why a request is not one an open (``auto``) server may answer without a key, or None: its peer
    must be loopback, its Host a loopback name, it must carry no proxy header, and a state-changing
    request must come from no other web origin (Origin / Sec-Fetch-Site)."""
    peer = request.scope.get("client") or ("", 0)
    host = request.headers.get("host", "")
    in_process = (str(peer[0]), host) == _IN_PROCESS
    if not in_process and not is_loopback(str(peer[0])):
        return f"comes from {peer[0] or 'an unknown peer'}, not from this machine"
    if not in_process and not is_loopback(_host_name(host)):
        return f"names the host {host[:100]!r}, not localhost, 127.0.0.1 or [::1]"
    proxied = sorted(h for h in request.headers if h in _PROXY_HEADERS or h.startswith("x-forwarded-"))
    if proxied:
        return f"came through a proxy ({', '.join(proxied)})"
    if request.method not in _SAFE_METHODS:
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
            return f"is a {request.method} from the web origin {origin[:100]!r}, not from this server's own page"
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return f"is a {request.method} a browser sent from a {site} page"
    return None


class AuthGate:
    """Lifecycle: one per app, built at start-up (opens the key store); ``close`` at shutdown."""

    def __init__(self, settings: Settings) -> None:
        api = settings.api
        self.mode = api.auth
        self.open = api.auth == "off" or (api.auth == "auto" and is_loopback(api.host))
        self.keys = KeyStore(settings.data_dir)
        self.rate = RateLimiter(api.rate_per_key, api.rate_burst)
        self.jobs = JobQuota(api.max_jobs_per_key)
        self.evaluations = JobQuota(api.max_evaluations_per_key, what="unfinished evaluations",
                                    setting="MMRAG_API__MAX_EVALUATIONS_PER_KEY")
        if api.auth == "off":
            log.warning("*** mmrag API is OPEN: no API key needed (MMRAG_API__AUTH=off, bound to %s). Anyone who "
                        "can reach this port, web pages in browsers included, can read, change and delete every "
                        "corpus. ***", api.host)
        elif self.open:
            log.warning("*** mmrag API answers LOCAL requests without a key (MMRAG_API__AUTH=auto, bound to %s): "
                        "any process of this machine can read, change and delete every corpus. Requests through a "
                        "proxy, for another Host, or posted by another web origin need a key. ***", api.host)
        else:
            log.info("API keys required (MMRAG_API__AUTH=%s); %d keys on file", api.auth, len(self.keys.list()))

    def principal(self, request: Request) -> Principal:
        header = request.headers.get("authorization")
        if self.mode == "off":
            return Principal(None)
        if header is None:
            why = not_local(request) if self.open else None
            if self.open and why is None:
                return Principal(None)
            raise Unauthorized("an API key is required: send 'Authorization: Bearer KEY' (create one with "
                               "`mmrag keys create`)" + (f"; this server answers without a key only requests from "
                                                         f"this machine's own clients, and this one {why}"
                                                         if why else ""))
        scheme, _, secret = header.partition(" ")
        return self.key_principal(secret.strip() if scheme.lower() == "bearer" else "")

    def key_principal(self, secret: str) -> Principal:
        """The principal of a key (the bearer header's, or ``mmrag mcp --key``'s): 401 for an unknown or
        revoked one, 429 over its rate."""
        key = self.keys.resolve(secret) if secret else None
        if key is None:
            raise Unauthorized("the API key is unknown, malformed or revoked; send 'Authorization: Bearer KEY'")
        wait = self.rate.take(key.id)
        if wait > 0:
            raise Overloaded(f"key {key.prefix}... is over its rate of {self.rate.rate:g} requests/s "
                             "(MMRAG_API__RATE_PER_KEY)", retry_after=wait)
        return Principal(key)

    def close(self) -> None:
        self.keys.close()


def get_gate(request: Request) -> AuthGate:
    gate: AuthGate = request.app.state.auth
    return gate


def get_principal(request: Request) -> Principal:
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None:
        principal = get_gate(request).principal(request)
        request.state.principal = principal
    return principal


def require(scope: Scope | None, *, corpus_from_path: bool = True) -> Any:
    """Dependency: the request's principal, checked for ``scope`` on the path's ``{corpus}``
    (when the route has one). ``scope=None``: any valid key; the route checks the object's corpus
    (jobs, evaluations) with :meth:`Principal.check`."""

    def dependency(request: Request) -> Principal:
        principal = get_principal(request)
        corpus = request.path_params.get("corpus") if corpus_from_path else None
        if scope is not None:
            principal.check(scope, corpus, f"unknown corpus {corpus!r}")
        return principal

    dependency.required_scope = scope  # type: ignore[attr-defined]  # read by the route-table test
    return Depends(dependency)


PUBLIC = "public"  # route_scopes: no key needed
ANY_KEY = "any"  # route_scopes: any valid key; the route checks the object's corpus


def route_scopes(app: Any) -> dict[tuple[str, str], str]:
    """(method, path template) -> what the route requires: ``public``, ``any``, or a scope. Read
    from each route's dependencies, so the contract and the route-table test cannot drift."""
    out: dict[tuple[str, str], str] = {}
    for route in iter_route_contexts(app.routes):
        found = route_requirement(route.original_route)
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", str(route.path))  # {name:path} -> {name}, as in OpenAPI
        for method in route.methods or ():
            out[(method, path)] = found
    return out


def route_requirement(route: Any) -> str:
    """What one route requires: from its dependencies (FastAPI routes), or its endpoint's ``required_scope``
    (a plain ASGI endpoint such as the MCP transport); ``public`` when neither says."""
    dependant = getattr(route, "dependant", None)
    if dependant is not None:
        return required_scope(dependant) or PUBLIC
    return str(getattr(getattr(route, "endpoint", None), "required_scope", None) or PUBLIC)


def required_scope(dependant: Any) -> str | None:
    """What a route's dependencies require: a scope, ``any`` (any valid key), or None (public)."""
    for dep in dependant.dependencies:
        if hasattr(dep.call, "required_scope"):
            return str(dep.call.required_scope or ANY_KEY)
        found = required_scope(dep)
        if found:
            return found
    return None
