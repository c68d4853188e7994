"""Answers: retrieve, select evidence under a visual-token budget, generate, stream (SSE)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from api.deps import ApplicationDep, ReadDep
from api.errors import responses
from api.observability import Metrics
from api.schemas import AnswerIn, AnswerOut
from api.sse import SSE_HEADERS, sse_event
from mmrag.application import AnswerRequest
from mmrag.generate.answer_events import AnswerDone, AnswerEvent, event_payload, final_event

router = APIRouter(prefix="/corpora/{corpus}", tags=["answer"])


def answer_request(body: AnswerIn) -> AnswerRequest:
    return AnswerRequest(body.question, body.top_k, body.visual_token_budget, body.max_new_tokens,
                         document_ids=body.document_ids)


@router.post("/answer", responses={**responses(400, 404, 409, 422, 429, 503),
                                   200: {"model": AnswerOut, "content": {"text/event-stream": {}}}})
async def answer(corpus: str, body: AnswerIn, request: Request, application: ApplicationDep,
                 principal: ReadDep) -> Response:
    """Answer a question from the corpus. With ``stream`` (default) the response is SSE: an
    ``evidence`` event (pages sent to the model and their visual-token cost), ``token`` events,
    then ``done`` with the answer, citations and per-stage timings. Without a VLM the answer is
    extractive (``mode: extractive``) and says so in ``notice``. 429 + Retry-After when the
    engine's token budget and queue are full."""
    mine = application.as_principal(principal)
    events = await run_in_threadpool(mine.answer, corpus, answer_request(body))  # errors raise here, before streaming
    if body.stream:
        return StreamingResponse(_iterate(events, request.app.state.metrics), media_type="text/event-stream",
                                 headers=SSE_HEADERS)
    done = final_event(await run_in_threadpool(list, events))  # an error event raises its error
    request.app.state.metrics.observe_timings("answer", done.timings)
    return JSONResponse(event_payload(done)[1])


async def _iterate(events: Iterator[AnswerEvent], metrics: Metrics):  # type: ignore[no-untyped-def]
    from starlette.concurrency import iterate_in_threadpool

    async for event in iterate_in_threadpool(events):
        if isinstance(event, AnswerDone):
            metrics.observe_timings("answer", event.timings)
        yield sse_event(*event_payload(event))
