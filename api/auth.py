"""API keys on requests: ``Authorization: Bearer KEY`` -> a :class:`Principal`, checked per route.

Every route declares what it needs once, with ``dependencies=[require(...)]`` or a ``Principal``
parameter from :func:`require`. A missing or unknown key is 401, a key without the scope 403, and
another tenant's corpus (or its documents, pages, jobs, evaluations) 404, so that a key never learns
what exists outside its corpus. The per-key request rate is enforced here too (429 + Retry-After).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.routing import iter_route_contexts

from api.limits import JobQuota, RateLimiter
from mmrag.config import Settings
from mmrag.errors import Forbidden, NotFound, Overloaded, Unauthorized
from mmrag.keys import ApiKey, KeyStore, Scope

log = logging.getLogger("mmrag.api.auth")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: a key, or nobody on an open server (everything allowed)."""

    key: ApiKey | None

    @property
    def id(self) -> str:
        return self.key.id if self.key is not None else "anonymous"

    def allows(self, scope: Scope, corpus: str | None = None) -> bool:
        return self.key is None or self.key.allows(scope, corpus)

    def sees(self, corpus: str) -> bool:
        return self.key is None or self.key.sees(corpus)

    def check(self, scope: Scope, corpus: str | None, missing: str) -> None:
        """Raise unless allowed: 404 (``missing``) for a corpus the key cannot see, else 403."""
        if self.allows(scope, corpus):
            return
        if corpus is not None and not self.sees(corpus):
            raise NotFound(missing)
        assert self.key is not None
        raise Forbidden(f"this key ({self.key.prefix}..., scope {self.key.scope}) does not allow this; "
                        f"it needs scope {scope}" + (f" on corpus {corpus!r}" if corpus else ""))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AuthGate:
    """Lifecycle: one per app, built at start-up (opens the key store); ``close`` at shutdown."""

    def __init__(self, settings: Settings) -> None:
        api = settings.api
        self.mode = api.auth
        self.open = api.auth == "off" or (api.auth == "auto" and is_loopback(api.host))
        self.keys = KeyStore(settings.data_dir)
        self.rate = RateLimiter(api.rate_per_key, api.rate_burst)
        self.jobs = JobQuota(api.max_jobs_per_key)
        if self.open:
            log.warning("*** mmrag API is OPEN: no API key needed (MMRAG_API__AUTH=%s, bound to %s). "
                        "Anyone who can reach this port can read, change and delete every corpus. ***",
                        api.auth, api.host)
        else:
            log.info("API keys required (MMRAG_API__AUTH=%s); %d keys on file", api.auth, len(self.keys.list()))

    def principal(self, request: Request) -> Principal:
        header = request.headers.get("authorization")
        if self.mode == "off" or (header is None and self._open_for(request)):
            return Principal(None)
        if header is None:
            raise Unauthorized("an API key is required: send 'Authorization: Bearer KEY' "
                               "(create one with `mmrag keys create`)")
        scheme, _, secret = header.partition(" ")
        key = self.keys.resolve(secret.strip()) if scheme.lower() == "bearer" else None
        if key is None:
            raise Unauthorized("the API key is unknown, malformed or revoked; send 'Authorization: Bearer KEY'")
        wait = self.rate.take(key.id)
        if wait > 0:
            raise Overloaded(f"key {key.prefix}... is over its rate of {self.rate.rate:g} requests/s "
                             "(MMRAG_API__RATE_PER_KEY)", retry_after=wait)
        return Principal(key)

    def _open_for(self, request: Request) -> bool:
        """Open server, and (in auto mode) the connection arrived on a loopback interface: a server
        started with another bind than the configured host still asks for keys."""
        if not self.open:
            return False
        server = request.scope.get("server")
        host = str(server[0]) if server else ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return True  # in-process test clients ("testserver")
        return self.mode == "off" or is_loopback(host)

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


GateDep = Annotated[AuthGate, Depends(get_gate)]
PrincipalDep = Annotated[Principal, require(None)]
ReadDep = Annotated[Principal, require("read")]
WriteDep = Annotated[Principal, require("write")]
AdminDep = Annotated[Principal, require("admin")]


PUBLIC = "public"  # route_scopes: no key needed
ANY_KEY = "any"  # route_scopes: any valid key; the route checks the object's corpus


def route_scopes(app: Any) -> dict[tuple[str, str], str]:
    """(method, path template) -> what the route requires: ``public``, ``any``, or a scope. Read
    from each route's dependencies, so the contract and the route-table test cannot drift."""
    out: dict[tuple[str, str], str] = {}
    for route in iter_route_contexts(app.routes):
        dependant = getattr(route.original_route, "dependant", None)
        found = _required(dependant) if dependant is not None else None
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", str(route.path))  # {name:path} -> {name}, as in OpenAPI
        for method in route.methods or ():
            out[(method, path)] = found or PUBLIC
    return out


def _required(dependant: Any) -> str | None:
    for dep in dependant.dependencies:
        if hasattr(dep.call, "required_scope"):
            return str(dep.call.required_scope or ANY_KEY)
        found = _required(dep)
        if found:
            return found
    return None
