"""mmrag as an MCP server (the official ``mcp`` SDK): tools ``list_corpora``, ``search``, ``get_page``, ``answer``
and each page as resources (``mmrag://corpora/{corpus}/pages/{page_id}``: its image; ``.../text``: its text
and word boxes as JSON).

The tools' input schemas are the REST routes' request models (:class:`api.schemas.SearchIn`,
:class:`api.schemas.AnswerIn`) with the corpus in front. They call the application
(:mod:`mmrag.application`) and nothing else: over HTTP (mounted on the API at ``/mcp``, :func:`mount_mcp`)
the app's, as the request's key sees it (:class:`api.auth.AuthGate`, the REST routes' checks: 401, rate,
another tenant's corpus is unknown); over stdio (``mmrag mcp``, :mod:`cli.mcp_cmd`) the same in-process,
or the one over the REST API.
An mmrag error becomes the tool's error result (or the resource read's error), never data.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any

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

from api.auth import ANY_KEY
from api.routes.answer import answer_request
from api.routes.search import decode_base64, search_request
from api.schemas import AnswerIn, SearchIn
from mmrag import __version__
from mmrag.application import Application
from mmrag.errors import MMRAGError, Unavailable
from mmrag.generate.answer_events import event_payload, final_event

PAGE_URI = "mmrag://corpora/{corpus}/pages/{page_id}"
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)  # every tool reads this server's corpora
INSTRUCTIONS = ("mmrag searches and answers from document corpora (PDFs, scans, images). list_corpora, then "
                "search a corpus or ask it a question with answer (it cites pages); get_page reads a page.")


def corpus_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A corpus as ``list_corpora`` shows it."""
    return {"name": row["name"], "documents": row["documents"], "pages": row["pages"],
            "spaces": list(row["config"]["spaces"])}


def search_results(application: Application, corpus: str, body: SearchIn) -> list[dict[str, Any]]:
    """The ``search`` tool's results: the REST result fields, with each page's resource URI (``page_uri``)."""
    image = decode_base64(body.image_base64) if body.image_base64 else None
    found = application.search(corpus, search_request(body, body.query, image, body.image_page_id))
    return [{**e.as_json(), "page_uri": PAGE_URI.format(corpus=corpus, page_id=e.page_id)} for e in found.evidence]


def answer_of(application: Application, corpus: str, body: AnswerIn) -> dict[str, Any]:
    """The ``answer`` tool's result: the final answer event's fields."""
    return event_payload(final_event(application.answer(corpus, answer_request(body))))[1]


ANNOTATED: Any = Annotated  # built at run time from a field (a type checker reads Annotated[...] as a type)
ApplicationOf = Callable[[Context], Application]  # a tool call's application (the HTTP request key's, or the process's)


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
    """Run an application call in a worker thread (it searches, reads pages, generates); an mmrag error becomes
    the SDK's tool (or resource) error with the same message."""
    try:
        return await anyio.to_thread.run_sync(what)
    except MMRAGError as exc:
        raise error(f"{exc.code}: {exc.message}") from exc


def build_mcp(application_of: ApplicationOf) -> MCPServer:
    mcp = MCPServer("mmrag", version=__version__, instructions=INSTRUCTIONS)

    @mcp.tool(description="The corpora this key may read: name, documents, pages, search spaces.",
              annotations=READ_ONLY)
    async def list_corpora(ctx: Context) -> dict[str, Any]:
        application = application_of(ctx)
        return {"corpora": [corpus_summary(row) for row in await call(application.corpora)]}

    async def search(ctx: Context, corpus: str, **fields: Any) -> dict[str, Any]:
        body = SearchIn.model_validate(fields)
        application = application_of(ctx)
        return {"results": await call(lambda: search_results(application, corpus, body))}

    mcp.add_tool(with_parameters(search, model_parameters(SearchIn)), name="search", annotations=READ_ONLY,
                 description="Hybrid search of a corpus (the REST search's fields: query, top_k, metadata filters, "
                             "document_ids, pages range, spaces, ...): ranked pages with snippets and word boxes.")

    async def answer(ctx: Context, corpus: str, **fields: Any) -> dict[str, Any]:
        body = AnswerIn.model_validate({**fields, "stream": False})
        application = application_of(ctx)
        return dict(await call(lambda: answer_of(application, corpus, body)))

    mcp.add_tool(with_parameters(answer, model_parameters(AnswerIn, skip=("stream",))), name="answer",
                 annotations=READ_ONLY,
                 description="Answer a question from a corpus: the answer with [n] markers and the cited pages "
                             "(mode extractive, with a notice, when the server has no VLM).")

    @mcp.tool(description="One page: its text, word boxes (normalised x0, y0, x1, y1), document, and its image.",
              structured_output=False, annotations=READ_ONLY)
    async def get_page(corpus: Annotated[str, Field(min_length=1, max_length=63)],
                       page_id: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")],
                       ctx: Context) -> list[str | Image]:
        application = application_of(ctx)
        page = await call(lambda: application.page(corpus, page_id))
        png = await call(lambda: application.page_image(corpus, page_id))
        return [json.dumps(page, ensure_ascii=False), Image(data=png, format="png")]

    @mcp.resource(PAGE_URI, name="page", mime_type="image/png", description="A page's image (PNG)")
    async def page_image(corpus: str, page_id: str, ctx: Context) -> bytes:
        application = application_of(ctx)
        return bytes(await call(lambda: application.page_image(corpus, page_id), ResourceError))

    @mcp.resource(PAGE_URI + "/text", name="page_text", mime_type="application/json",
                  description="A page's text and word boxes (JSON)")
    async def page_text(corpus: str, page_id: str, ctx: Context) -> str:
        application = application_of(ctx)
        return json.dumps(await call(lambda: application.page(corpus, page_id), ResourceError), ensure_ascii=False)

    return mcp


def request_application(ctx: Context) -> Application:
    """The application of an MCP request over HTTP: the app's, as the key :class:`McpEndpoint` checked sees it."""
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise Unavailable("the MCP endpoint of the API serves only HTTP requests")
    application: Application = request.app.state.application.as_principal(request.state.principal)
    return application


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
    endpoint = McpEndpoint(build_mcp(request_application))
    app.router.routes.append(Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    return endpoint
