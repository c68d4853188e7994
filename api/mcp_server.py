"""mmrag as an MCP server (the official ``mcp`` SDK): tools ``list_corpora``, ``search``, ``get_page``, ``answer``
and each page as resources (``mmrag://corpora/{corpus}/pages/{page_id}``: its image; ``.../text``: its text
and word boxes as JSON).

The tools' input schemas are the REST routes' request models (:class:`api.schemas.SearchIn`,
:class:`api.schemas.AnswerIn`) with the corpus in front. They call a :class:`Library`: over HTTP (mounted
on the API at ``/mcp``, :func:`mount_mcp`) a :class:`PipelineLibrary` of the app's pipeline and the
request's key (:class:`api.auth.AuthGate`, the REST routes' checks: 401, rate, another tenant's corpus is
unknown); over stdio (``mmrag mcp``, :mod:`cli.mcp_cmd`) the same in-process, or the REST API's client.
An mmrag error becomes the tool's error result (or the resource read's error), never data.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any, Protocol

import anyio
from fastapi import FastAPI
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api.auth import ANY_KEY, Principal
from api.routes.documents import page_detail, page_links
from api.routes.search import decode_base64, search_request
from api.schemas import AnswerIn, SearchIn
from mmrag import __version__
from mmrag.errors import MMRAGError, Unavailable
from mmrag.generate.answer_service import event_payloads, final_answer
from mmrag.pipeline import Pipeline

PAGE_URI = "mmrag://corpora/{corpus}/pages/{page_id}"
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)  # every tool reads this server's corpora
INSTRUCTIONS = ("mmrag searches and answers from document corpora (PDFs, scans, images). list_corpora, then "
                "search a corpus or ask it a question with answer (it cites pages); get_page reads a page.")


class Library(Protocol):
    """What the MCP tools read, as the REST API's shapes (plain data)."""

    def corpora(self) -> list[dict[str, Any]]: ...
    def search(self, corpus: str, body: SearchIn) -> list[dict[str, Any]]: ...
    def page(self, corpus: str, page_id: str) -> dict[str, Any]: ...
    def page_image(self, corpus: str, page_id: str) -> bytes: ...
    def answer(self, corpus: str, body: AnswerIn) -> dict[str, Any]: ...


class PipelineLibrary:
    """The pipeline, as one key may read it. Lifecycle: one per request (HTTP) or per process (stdio)."""

    def __init__(self, pipeline: Pipeline, principal: Principal) -> None:
        self.pipeline, self.principal = pipeline, principal

    def _check(self, corpus: str) -> None:
        self.principal.check("read", corpus, f"unknown corpus {corpus!r}")

    def corpora(self) -> list[dict[str, Any]]:
        return [{"name": r.name, "documents": r.documents, "pages": r.pages, "spaces": list(r.config.spaces)}
                for r in self.pipeline.corpora.listed() if self.principal.sees(r.name)]

    def search(self, corpus: str, body: SearchIn) -> list[dict[str, Any]]:
        self._check(corpus)
        image = decode_base64(body.image_base64) if body.image_base64 else None
        request = search_request(body, body.query, image, body.image_page_id)
        if image is not None or body.image_page_id is not None:
            self.pipeline.check_image_query(corpus, request.spaces)
        public = self.pipeline.settings.api.public_url
        return [{**e.as_json(), "image_url": page_links(public, corpus, e.page_id)[0]}
                for e in self.pipeline.search(corpus, request).evidence]

    def page(self, corpus: str, page_id: str) -> dict[str, Any]:
        self._check(corpus)
        return page_detail(self.pipeline, corpus, page_id).model_dump()

    def page_image(self, corpus: str, page_id: str) -> bytes:
        self._check(corpus)
        return self.pipeline.documents.page_image(corpus, page_id)

    def answer(self, corpus: str, body: AnswerIn) -> dict[str, Any]:
        self._check(corpus)
        self.pipeline.corpora.config(corpus)  # 404 for an unknown corpus
        service = self.pipeline.answers.enable()
        events = service.answer_stream(corpus, body.question, body.top_k, body.visual_token_budget,
                                       body.max_new_tokens, document_ids=body.document_ids)
        return final_answer(event_payloads(events))


ANNOTATED: Any = Annotated  # built at run time from a field (a type checker reads Annotated[...] as a type)
LibraryOf = Callable[[Context], Library]  # the library of a tool call (the HTTP request's key, or the process's)


def model_parameters(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """A pydantic model's fields as keyword parameters (type, constraints, description, default): the MCP
    SDK builds a tool's input schema from its function's signature."""
    params = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        annotation = ANNOTATED[(field.annotation, *field.metadata, Field(description=field.description))]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params


def with_parameters(fn: Callable[..., Any], params: list[inspect.Parameter]) -> Callable[..., Any]:
    """``fn(ctx, **kwargs)`` with the signature ``(corpus, <params>, ctx)`` for the SDK to read."""
    corpus = inspect.Parameter("corpus", inspect.Parameter.KEYWORD_ONLY,
                               annotation=Annotated[str, Field(min_length=1, max_length=63,
                                                               description="The corpus (see list_corpora)")])
    ctx = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    fn.__signature__ = inspect.Signature([corpus, *params, ctx], return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    fn.__annotations__ = {p.name: p.annotation for p in (corpus, *params, ctx)} | {"return": dict[str, Any]}
    return fn


async def call(what: Callable[[], Any], error: type[Exception] = ToolError) -> Any:
    """Run a library call in a worker thread (it searches, reads pages, generates); an mmrag error becomes
    the SDK's tool (or resource) error with the same message."""
    try:
        return await anyio.to_thread.run_sync(what)
    except MMRAGError as exc:
        raise error(f"{exc.code}: {exc.message}") from exc


def build_mcp(library_of: LibraryOf) -> MCPServer:
    mcp = MCPServer("mmrag", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool(description="The corpora this key may read: name, documents, pages, search spaces.",
              annotations=READ_ONLY)
    async def list_corpora(ctx: Context) -> dict[str, Any]:
        return {"corpora": await call(library_of(ctx).corpora)}

    async def search(ctx: Context, corpus: str, **fields: Any) -> dict[str, Any]:
        body = SearchIn.model_validate(fields)
        return {"results": await call(lambda: library_of(ctx).search(corpus, body))}

    mcp.add_tool(with_parameters(search, model_parameters(SearchIn)), name="search", annotations=READ_ONLY,
                 description="Hybrid search of a corpus (the REST search's fields: query, top_k, metadata filters, "
                             "document_ids, pages range, spaces, ...): ranked pages with snippets and word boxes.")

    async def answer(ctx: Context, corpus: str, **fields: Any) -> dict[str, Any]:
        body = AnswerIn.model_validate({**fields, "stream": False})
        return dict(await call(lambda: library_of(ctx).answer(corpus, body)))

    mcp.add_tool(with_parameters(answer, model_parameters(AnswerIn, skip=("stream",))), name="answer",
                 annotations=READ_ONLY,
                 description="Answer a question from a corpus: the answer with [n] markers and the cited pages "
                             "(mode extractive, with a notice, when the server has no VLM).")

    @mcp.tool(description="One page: its text, word boxes (normalised x0, y0, x1, y1), document, and its image.",
              structured_output=False, annotations=READ_ONLY)
    async def get_page(corpus: Annotated[str, Field(min_length=1, max_length=63)],
                       page_id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")],
                       ctx: Context) -> list[str | Image]:
        library = library_of(ctx)
        page = await call(lambda: library.page(corpus, page_id))
        png = await call(lambda: library.page_image(corpus, page_id))
        return [json.dumps(page, ensure_ascii=False), Image(data=png, format="png")]

    @mcp.resource(PAGE_URI, name="page", mime_type="image/png", description="A page's image (PNG)")
    async def page_image(corpus: str, page_id: str, ctx: Context) -> bytes:
        library = library_of(ctx)
        return bytes(await call(lambda: library.page_image(corpus, page_id), ResourceError))

    @mcp.resource(PAGE_URI + "/text", name="page_text", mime_type="application/json",
                  description="A page's text and word boxes (JSON)")
    async def page_text(corpus: str, page_id: str, ctx: Context) -> str:
        library = library_of(ctx)
        return json.dumps(await call(lambda: library.page(corpus, page_id), ResourceError), ensure_ascii=False)

    return mcp


def request_library(ctx: Context) -> Library:
    """The library of an MCP request over HTTP: the app's pipeline and the key :class:`McpEndpoint` checked."""
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise Unavailable("the MCP endpoint of the API serves only HTTP requests")
    return PipelineLibrary(request.app.state.pipeline, request.state.principal)


class McpEndpoint:
    """The ``/mcp`` route: the SDK's streamable HTTP transport (stateless: every request carries its own key).
    It requires a key like any REST route (``required_scope``: the gate checks it before the body is read, 401
    without one, 429 over its rate, and keeps its principal for the tools); each tool checks the corpus."""

    required_scope = ANY_KEY  # read by api.auth.route_requirement (the gate, the route table)

    def __init__(self, mcp: MCPServer) -> None:
        # no DNS-rebinding check of the SDK's own: the key gate decides (an open server answers only requests
        # that name a loopback Host and come from this machine's clients; see api.auth.not_local)
        mcp.streamable_http_app(stateless_http=True, json_response=True,
                                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.manager = mcp.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI) -> McpEndpoint:
    """``/mcp`` on the app (not in the OpenAPI document: it is JSON-RPC, not a REST route). The app's lifespan
    runs the endpoint's session manager (``endpoint.manager.run()``)."""
    endpoint = McpEndpoint(build_mcp(request_library))
    app.router.routes.append(Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    return endpoint
