"""Search a corpus."""

from __future__ import annotations

import base64
import binascii

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from api.deps import PipelineDep
from api.errors import responses
from api.routes.documents import page_urls
from api.schemas import EvidenceOut, SearchIn, SearchOut
from mmrag.errors import InvalidInput
from mmrag.types import Evidence, SearchRequest

router = APIRouter(prefix="/corpora/{corpus}", tags=["search"])


def evidence_out(request: Request, ev: Evidence) -> EvidenceOut:
    image, thumb = page_urls(request, ev.corpus, ev.page_id)
    return EvidenceOut(kind=ev.kind.value, document_id=ev.document_id, document=ev.filename, page_id=ev.page_id,
                       page=ev.page, score=ev.score, snippet=ev.snippet, boxes=ev.boxes, scores=ev.scores,
                       ranks=ev.ranks, metadata=ev.metadata, image_url=image, thumbnail_url=thumb)


def search_request(body: SearchIn) -> SearchRequest:
    image = None
    if body.image_base64:
        try:
            image = base64.b64decode(body.image_base64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput(f"image_base64 is not valid base64: {exc}") from exc
    return SearchRequest(query=body.query, image=image, top_k=body.top_k, document_ids=body.document_ids,
                         metadata=dict(body.metadata), spaces=list(body.spaces) if body.spaces else None,
                         weights=body.weights, explain=body.explain)


@router.post("/search", response_model=SearchOut, responses=responses(400, 404, 413, 422, 503))
async def search(corpus: str, body: SearchIn, request: Request, pipeline: PipelineDep) -> SearchOut:
    """Hybrid search: each space's candidates fused with RRF (and reranked by MaxSim when ColPali is on)."""
    result = await run_in_threadpool(pipeline.search, corpus, search_request(body))
    return SearchOut(results=[evidence_out(request, e) for e in result.evidence], timings=result.timings)
