"""Search a corpus: JSON (text and/or base64 image, or a page reference) or a multipart image upload."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, Response, UploadFile
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.auth import ReadDep
from api.deps import PipelineDep
from api.errors import responses
from api.routes.documents import page_urls
from api.schemas import EvidenceOut, SearchIn, SearchOptions, SearchOut
from mmrag.errors import InvalidInput, TooLarge
from mmrag.types import Evidence, SearchRequest

router = APIRouter(prefix="/corpora/{corpus}", tags=["search"])
ERRORS = responses(400, 404, 413, 422, 503)


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
        if options.pages.last < options.pages.first:
            raise InvalidInput(f"pages.last ({options.pages.last}) is before pages.first ({options.pages.first})")
        pages = (options.pages.first, options.pages.last)
    return SearchRequest(query=query, image=image, top_k=options.top_k, document_ids=options.document_ids,
                         metadata=dict(options.metadata), spaces=list(options.spaces) if options.spaces else None,
                         weights=None if options.weights is None else {str(k): v for k, v in options.weights.items()},
                         explain=options.explain, image_page_id=image_page_id, pages=pages,
                         kinds=list(options.kinds) if options.kinds else None, prefetch_limit=options.prefetch_limit,
                         rrf_k=options.rrf_k, fusion=options.fusion)


async def _run(pipeline: PipelineDep, corpus: str, request: Request, search: SearchRequest) -> Response:
    """Search in the thread pool; the response is serialised once here (FastAPI would validate
    the returned model a second time against ``response_model``: ~0.3 ms per request)."""
    result = await run_in_threadpool(pipeline.search, corpus, search)
    request.app.state.metrics.observe_timings("search", result.timings)
    out = SearchOut(results=[evidence_out(request, e) for e in result.evidence], timings=result.timings)
    return Response(out.model_dump_json(), media_type="application/json")


@router.post("/search", response_model=SearchOut, responses=ERRORS)
async def search(corpus: str, body: SearchIn, request: Request, pipeline: PipelineDep, _: ReadDep) -> Response:
    """Hybrid search. Each space's candidates (text dense, BM25, CLIP, pooled ColPali) are fused
    (DBSF by default, weighted RRF with ``weights`` or ``fusion: rrf``) and, when ColPali is used,
    reranked by full MaxSim, in one store query."""
    image = decode_base64(body.image_base64) if body.image_base64 else None
    return await _run(pipeline, corpus, request, search_request(body, body.query, image, body.image_page_id))


async def _read_image(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"query image is larger than the limit of {limit:,} bytes (MMRAG_INGEST__MAX_UPLOAD_BYTES)")
    return data


@router.post("/search/image", response_model=SearchOut, responses=ERRORS)
async def search_by_image(corpus: str, request: Request, pipeline: PipelineDep, _: ReadDep,
                          image: Annotated[UploadFile, File(description="The query image")],
                          query: Annotated[str, Form(max_length=10_000, description="Optional text")] = "",
                          options: Annotated[str, Form(description="SearchOptions as JSON")] = "{}") -> Response:
    """Pages like this image (multipart upload), through the image-capable spaces (clip, colpali)."""
    try:
        parsed = SearchOptions.model_validate_json(options or "{}")
    except ValidationError as exc:
        raise InvalidInput(f"options: {exc.errors()[0].get('msg')} at {exc.errors()[0].get('loc')}") from exc
    data = await _read_image(image, request.app.state.settings.ingest.max_upload_bytes)
    return await _run(pipeline, corpus, request, search_request(parsed, query, data))
