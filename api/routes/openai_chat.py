"""OpenAI's ``/v1/chat/completions`` and ``/v1/models``: a corpus is a model. A thin translation onto the
answer service (:mod:`mmrag.generate.answer_service`, the same path as ``POST /corpora/{corpus}/answer``): the
messages become a question and a :class:`~mmrag.generate.conversation.Conversation`, the answer's events
become a ``chat.completion`` or ``chat.completion.chunk`` events. Errors have OpenAI's shape (api.errors)."""

from __future__ import annotations

import base64
import binascii
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from api.deps import ApplicationDep, PrincipalDep
from api.errors import openai_payload, status_of
from api.openai_schemas import (
    Annotation,
    AssistantOut,
    ChatCitation,
    ChatCompletionChunk,
    ChatCompletionIn,
    ChatCompletionOut,
    ChoiceOut,
    ChunkChoice,
    CompletionUsage,
    DeltaOut,
    ModelList,
    ModelOut,
    OpenAIErrorBody,
    TextPart,
    UrlCitation,
    UserMessage,
)
from api.routes.documents import page_urls
from api.routes.search import image_turns
from api.sse import SSE_DONE, SSE_HEADERS, sse_data
from mmrag.application import AnswerRequest, Application
from mmrag.errors import InvalidInput, NotFound, TooLarge, error_for_code
from mmrag.generate.answer_events import AnswerDone, AnswerError, AnswerEvent, TokenDelta, event_payload, final_event
from mmrag.generate.conversation import Conversation, Turn
from mmrag.spaces.registry import space_names

router = APIRouter(prefix="/v1", tags=["openai"])
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": OpenAIErrorBody, "description": text} for code, text in {
        400: "Invalid request (OpenAI's invalid_request_error)", 401: "No API key, or an unknown one",
        403: "The key may not read this corpus", 404: "model_not_found: no corpus of that name the key may read",
        413: "Too large", 429: "Over the key's rate, or the VLM is full: retry after Retry-After seconds",
        503: "The answer service is unavailable"}.items()}
CHUNK_EVENT = {  # one event of the stream: a chunk as JSON, an error after streaming began, or the end
    "type": "object", "required": ["data"], "properties": {"data": {"anyOf": [
        {"const": "[DONE]"},
        {"type": "string", "contentMediaType": "application/json",
         "contentSchema": {"anyOf": [{"$ref": "#/components/schemas/ChatCompletionChunk"},
                                     {"$ref": "#/components/schemas/OpenAIErrorBody"}]}}]}}}
TOP_K = 5  # pages retrieved as candidate evidence (the answer route's default)
DATA_URL = re.compile(r"^data:image/[\w.+-]+;base64,(?P<data>.*)$", re.S)


@dataclass(frozen=True, slots=True)
class Question:
    """A chat request as the answer service takes it."""

    corpus: str
    text: str  # the last user message's text
    conversation: Conversation
    image_url: str | None  # the last user message's image (a data URL), decoded only after the checks


def model_corpus(model: str, application: Application) -> tuple[str, list[str] | None]:
    """``corpus`` or ``corpus:space+space`` -> (corpus, spaces); 404 model_not_found for a corpus the key
    cannot read (or that does not exist: the key learns nothing more), 400 for an unknown space."""
    corpus, _, profile = model.partition(":")
    missing = NotFound(f"The model `{model}` does not exist or you do not have access to it.",
                       detail={"param": "model", "code": "model_not_found"})
    try:
        application.corpus(corpus)  # NotFound for a corpus the key cannot see, or that does not exist
    except NotFound as exc:
        raise missing from exc
    spaces = [s for s in re.split(r"[+,]", profile) if s] if profile else None
    unknown = sorted(set(spaces or ()) - set(space_names()))
    if unknown:
        raise InvalidInput(f"model {model!r}: unknown search space(s) {unknown}; a model is a corpus, optionally "
                           f"with spaces after a colon, e.g. {corpus}:bm25 or {corpus}:text+bm25 (spaces: "
                           f"{', '.join(space_names())})", detail={"param": "model", "code": "invalid_value"})
    return corpus, spaces


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if isinstance(p, TextPart))


def images_of(message: UserMessage) -> list[str]:
    return [] if isinstance(message.content, str) else [p.image_url.url for p in message.content
                                                         if not isinstance(p, TextPart)]


def question_of(body: ChatCompletionIn, corpus: str, spaces: list[str] | None) -> Question:
    """The last user message with text or an image is the question (its image is a query image); the user
    and assistant messages before it are the conversation; system and developer messages are instructions."""
    users = [i for i, m in enumerate(body.messages)
             if isinstance(m, UserMessage) and (text_of(m.content).strip() or images_of(m))]
    if not users:
        raise InvalidInput("messages has no user message with text or an image: that is the question",
                           detail={"param": "messages", "code": "invalid_value"})
    last = body.messages[users[-1]]
    assert isinstance(last, UserMessage)
    images = images_of(last)
    if len(images) > 1:
        raise InvalidInput("the question has more than one image; allowed: one image (a query image)",
                           detail={"param": "messages", "code": "invalid_value"})
    earlier = [Turn("user" if m.role == "user" else "assistant", text_of(m.content))
               for m in body.messages[:users[-1]] if m.role in ("user", "assistant") and text_of(m.content).strip()]
    instructions = "\n".join(text_of(m.content) for m in body.messages if m.role in ("system", "developer"))
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or ())
    text = text_of(last.content)
    talk = Conversation(earlier=earlier, instructions=instructions, spaces=spaces, stop=stop)
    return Question(corpus, text, talk, images[0] if images else None)


def decode_data_url(url: str, limit: int) -> bytes:
    match = DATA_URL.match(url)
    if match is None:
        raise InvalidInput("image_url must be a data URL (data:image/png;base64,...); this server fetches no URL",
                           detail={"param": "messages", "code": "invalid_value"})
    if len(match["data"]) > -(-limit // 3) * 4:
        raise TooLarge(f"the query image is larger than the limit of {limit:,} bytes "
                       "(MMRAG_RETRIEVE__MAX_QUERY_IMAGE_BYTES)")
    try:
        return base64.b64decode(match["data"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"image_url is not valid base64: {exc}",
                           detail={"param": "messages", "code": "invalid_value"}) from exc


def start_answer(application: Application, question: Question, body: ChatCompletionIn) -> Iterator[AnswerEvent]:
    request = AnswerRequest(question.text, TOP_K, None, body.max_completion_tokens or body.max_tokens,
                            temperature=body.temperature or 0.0, conversation=question.conversation)
    return application.answer(question.corpus, request)


@router.post("/chat/completions", response_model=ChatCompletionOut, responses={
    **ERRORS, 200: {"content": {"text/event-stream": {"schema": CHUNK_EVENT}},
                    "description": "The answer; with stream, chat.completion.chunk events then [DONE]"}})
async def chat_completions(body: ChatCompletionIn, request: Request, application: ApplicationDep,
                           principal: PrincipalDep) -> Response:
    """OpenAI's chat completion over a corpus: the last user message is the question, searched with the
    earlier user messages for context; the answer cites pages (``annotations``, ``citations``). Without a
    VLM the answer is extractive (``mode``, ``notice``) and ``usage`` counts words, not tokens."""
    mine = application.as_principal(principal)
    corpus, spaces = model_corpus(body.model, mine)  # the key's tenancy: 404 model_not_found
    question = question_of(body, corpus, spaces)
    if question.image_url is not None:  # the application refuses it when no space the answer uses takes images
        image = decode_data_url(question.image_url, request.app.state.settings.retrieve.max_query_image_bytes)
        question = replace(question, conversation=replace(question.conversation, image=image), image_url=None)
        async with image_turns(request):
            events = await run_in_threadpool(start_answer, mine, question, body)
    else:
        events = await run_in_threadpool(start_answer, mine, question, body)
    reply = Reply(request, body.model, corpus)
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(reply.chunks(events, include_usage), media_type="text/event-stream",
                                 headers=SSE_HEADERS)
    done = event_payload(final_event(await run_in_threadpool(list, events)))[1]  # an error event raises its error
    request.app.state.metrics.observe_timings("answer", done["timings"])
    return JSONResponse(reply.completion(done).model_dump())


class Reply:
    """The answer in OpenAI's shapes. Lifecycle: one per request."""

    def __init__(self, request: Request, model: str, corpus: str) -> None:
        self.request, self.model, self.corpus = request, model, corpus
        self.id, self.created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())

    def citations(self, done: dict[str, Any]) -> tuple[list[ChatCitation], list[Annotation]]:
        cites, notes = [], []
        for c in done["citations"]:
            url = page_urls(self.request, self.corpus, c["page_id"])[0]
            if url.startswith("/"):  # no MMRAG_API__PUBLIC_URL: the address the client used
                url = str(self.request.base_url).rstrip("/") + url
            cites.append(ChatCitation(n=c["n"], document_id=c["document_id"], filename=c["filename"],
                                      page=c["page"], page_id=c["page_id"], url=url))
            marker = f"[{c['n']}]"
            start = done["answer"].find(marker)
            span = (start, start + len(marker)) if start >= 0 else (0, 0)
            notes.append(Annotation(url_citation=UrlCitation(url=url, title=f"{c['filename']} p.{c['page']}",
                                                             start_index=span[0], end_index=span[1])))
        return cites, notes

    @staticmethod
    def usage(done: dict[str, Any]) -> CompletionUsage:
        used = done["usage"]
        return CompletionUsage(prompt_tokens=used["prompt_tokens"], completion_tokens=used["completion_tokens"],
                        total_tokens=used["prompt_tokens"] + used["completion_tokens"])

    def completion(self, done: dict[str, Any]) -> ChatCompletionOut:
        cites, notes = self.citations(done)
        message = AssistantOut(content=done["answer"], annotations=notes)
        return ChatCompletionOut(id=self.id, created=self.created, model=self.model, usage=self.usage(done),
                                 choices=[ChoiceOut(message=message, finish_reason=done["finish_reason"])],
                                 citations=cites, mode=done["mode"], notice=done["notice"])

    def chunk(self, delta: DeltaOut, finish: Any = None, **extra: Any) -> str:
        """One chunk as OpenAI sends it: ``finish_reason`` and ``logprobs`` always (null until the end),
        the delta's and the chunk's optional fields only when set."""
        choices = [] if extra.get("usage") else [ChunkChoice(delta=delta, finish_reason=finish)]
        chunk = ChatCompletionChunk(id=self.id, created=self.created, model=self.model, choices=choices, **extra)
        data = chunk.model_dump(exclude_none=True)
        for choice in data["choices"]:
            choice.setdefault("finish_reason", None)
            choice.setdefault("logprobs", None)
        return sse_data(data)

    async def chunks(self, events: Iterator[AnswerEvent], include_usage: bool) -> AsyncIterator[str]:
        """role chunk, content chunks, the finishing chunk (annotations, citations), [usage chunk], [DONE];
        an error after streaming began is one ``data: {"error": ...}`` event (the openai client raises it)."""
        yield self.chunk(DeltaOut(role="assistant", content=""))
        async for event in iterate_in_threadpool(events):
            if isinstance(event, TokenDelta) and event.text:
                yield self.chunk(DeltaOut(content=event.text))
            elif isinstance(event, AnswerError):
                status = status_of(error_for_code(event.code, event.message))
                yield sse_data(openai_payload(status, f"answer failed ({event.code}): {event.message}"))
                return
            elif isinstance(event, AnswerDone):
                self.request.app.state.metrics.observe_timings("answer", event.timings)
                done = event_payload(event)[1]
                cites, notes = self.citations(done)
                yield self.chunk(DeltaOut(annotations=notes), event.finish_reason, citations=cites,
                                 mode=event.mode, notice=event.notice)
                if include_usage:
                    yield self.chunk(DeltaOut(), usage=self.usage(done))
        yield SSE_DONE


@router.get("/models", response_model=ModelList, responses={k: v for k, v in ERRORS.items() if k in (401, 429)})
def list_models(application: ApplicationDep, principal: PrincipalDep) -> ModelList:
    """The corpora this key may read, as OpenAI models (a model id is a corpus name)."""
    return ModelList(data=[ModelOut(id=c["name"], created=int(c["created_at"]))
                           for c in application.as_principal(principal).corpora()])
