"""Search a corpus: JSON (text and/or base64 image, or a page reference) or a multipart image upload.

A query image is refused before it is decoded when the corpus has no image space (clip, colpali:
409, as for any space the corpus lacks) or the request's spaces use none (400); it is decoded under
MMRAG_RETRIEVE__MAX_QUERY_IMAGE_PIXELS (JPEGs at a reduced scale) and at most
MMRAG_API__IMAGE_QUERY_CONCURRENCY at a time."""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, Response, UploadFile
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.deps import ApplicationDep, ReadDep
from api.errors import responses
from api.routes.documents import page_urls
from api.schemas import EvidenceOut, SearchIn, SearchOptions, SearchOut
from mmrag.application import Application
from mmrag.errors import InvalidInput, TooLarge
from mmrag.types import Evidence, SearchRequest

router = APIRouter(prefix="/corpora/{corpus}", tags=["search"])
ERRORS = responses(400, 404, 409, 413, 422, 503)  # 409: spaces (or an image space) the corpus lacks


def evidence_out(request: Request, ev: Evidence) -> EvidenceOut:
    image, thumb = page_urls(request, ev.corpus, ev.page_id)
    return EvidenceOut(**ev.as_json(), image_url=image, thumbnail_url=thumb)


def decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"image_base64 is not valid base64: {exc}") from exc


def search_request(options: SearchOptions, query: str = "", image: bytes | None = None,
                   image_page_id: str | None = None) -> SearchRequest:
    pages = None
    if options.pages is not None:
        pages = (options.pages.first, options.pages.last)
    prefetch = None if options.prefetch_limit is None else max(options.prefetch_limit, options.top_k)
    return SearchRequest(query=query, image=image, top_k=options.top_k, document_ids=options.document_ids,
                         metadata=dict(options.metadata), spaces=list(options.spaces) if options.spaces else None,
                         weights=None if options.weights is None else {str(k): v for k, v in options.weights.items()},
                         explain=options.explain, image_page_id=image_page_id, pages=pages,
                         kinds=list(options.kinds) if options.kinds else None, prefetch_limit=prefetch,
                         rrf_k=options.rrf_k, fusion=options.fusion)


async def _run(application: Application, corpus: str, request: Request, search: SearchRequest) -> Response:
    """Search in the thread pool; the response is serialised once here (FastAPI would validate
    the returned model a second time against ``response_model``: ~0.3 ms per request). Image queries
    take a turn of the image semaphore (decoding and embedding an image is the costly part)."""
    if search.image is not None or search.image_page_id is not None:
        async with image_turns(request):
            result = await run_in_threadpool(application.search, corpus, search)
    else:
        result = await run_in_threadpool(application.search, corpus, search)
    request.app.state.metrics.observe_timings("search", result.timings)
    out = SearchOut(results=[evidence_out(request, e) for e in result.evidence], timings=result.timings)
    return Response(out.model_dump_json(), media_type="application/json")


def image_turns(request: Request) -> asyncio.Semaphore:
    """The app's semaphore of image queries (made on first use, in the event loop that serves it)."""
    state = request.app.state
    if getattr(state, "image_turns", None) is None:
        state.image_turns = asyncio.Semaphore(state.settings.api.image_query_concurrency)
    turns: asyncio.Semaphore = state.image_turns
    return turns


@router.post("/search", response_model=SearchOut, responses=ERRORS)
async def search(corpus: str, body: SearchIn, request: Request, application: ApplicationDep,
                 principal: ReadDep) -> Response:
    """Hybrid search. Each space's candidates (text dense, BM25, CLIP, pooled ColPali) are fused
    (DBSF by default, weighted RRF with ``weights`` or ``fusion: rrf``) and, when ColPali is used,
    reranked by full MaxSim, in one store query."""
    image = decode_base64(body.image_base64) if body.image_base64 else None
    return await _run(application.as_principal(principal), corpus, request,
                      search_request(body, body.query, image, body.image_page_id))


async def _read_image(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"query image is larger than the limit of {limit:,} bytes "
                       "(MMRAG_RETRIEVE__MAX_QUERY_IMAGE_BYTES)")
    return data


@router.post("/search/image", response_model=SearchOut, responses=ERRORS)
async def search_by_image(corpus: str, request: Request, application: ApplicationDep, principal: ReadDep,
                          image: Annotated[UploadFile, File(description="The query image (PNG, JPEG, WebP, TIFF, "
                                                                        "BMP, GIF); only for a corpus with an image "
                                                                        "space the request uses")],
                          query: Annotated[str, Form(max_length=10_000, description="Optional text")] = "",
                          options: Annotated[str, Form(description="SearchOptions as JSON")] = "{}") -> Response:
    """Pages like this image (multipart upload), through the image-capable spaces (clip, colpali)."""
    try:
        parsed = SearchOptions.model_validate_json(options or "{}")
    except ValidationError as exc:
        raise InvalidInput(f"options: {exc.errors()[0].get('msg')} at {exc.errors()[0].get('loc')}") from exc
    mine = application.as_principal(principal)
    mine.check_image_query(corpus, list(parsed.spaces) if parsed.spaces else None)  # before the upload is read
    data = await _read_image(image, request.app.state.settings.retrieve.max_query_image_bytes)
    return await _run(mine, corpus, request, search_request(parsed, query, data))
