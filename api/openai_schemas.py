"""OpenAI's wire format of ``/v1/chat/completions`` and ``/v1/models``, as far as mmrag speaks it.

Requests ignore fields they do not know (as OpenAI's server does for the ones clients add); fields they
know are checked, and a bad one is a 400 in OpenAI's error shape (:class:`OpenAIErrorBody`). Responses
carry OpenAI's fields, the cited pages as ``url_citation`` annotations, and mmrag's own extras
(``citations``, ``mode``, ``notice``) at the top level, where a client that does not know them skips them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

MAX_MESSAGES = 200
MAX_TEXT = 20_000  # characters of one message or part (retrieval reads at most MMRAG_RETRIEVE__MAX_QUERY_CHARS)
DATA_URL = r"^data:image/[\w.+-]+;base64,[A-Za-z0-9+/=]+$"
MAX_IMAGE_URL = 30_000_000  # a data URL (the image's own byte limit is checked after decoding the base64)


def json_number(value: Any) -> Any:
    """A JSON number only: ``true`` and ``"5"`` are refused (pydantic's lax mode would take them), ``5.0`` is
    an integer (as JSON Schema says)."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON number")
    return value


Tokens = Annotated[int, Field(ge=1, le=8192), BeforeValidator(json_number)]
Temperature = Annotated[float, Field(ge=0, le=2), BeforeValidator(json_number)]
OnlyOne = Annotated[int, Field(ge=1, le=1), BeforeValidator(json_number)]


class IgnoringModel(BaseModel):
    """Unknown fields are ignored; known scalars are strict (``true`` is not a number, ``1`` not a boolean)."""

    model_config = ConfigDict(extra="ignore")  # fields OpenAI clients add that mmrag has no use for


class TextPart(IgnoringModel):
    type: Literal["text"]
    text: str = Field(..., max_length=MAX_TEXT)


class ImageUrl(IgnoringModel):
    url: str = Field(..., min_length=1, max_length=MAX_IMAGE_URL, pattern=DATA_URL,
                     description="A data URL (data:image/png;base64,...): the image is a query image of the "
                                 "retrieval; this server fetches no other URL")
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(IgnoringModel):
    type: Literal["image_url"]
    image_url: ImageUrl


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]
Content = Annotated[str, Field(max_length=MAX_TEXT)] | Annotated[list[TextPart], Field(max_length=100)]


class SystemMessage(IgnoringModel):
    role: Literal["system", "developer"]
    content: Content
    name: str | None = Field(None, max_length=200)


class UserMessage(IgnoringModel):
    role: Literal["user"]
    content: Annotated[str, Field(max_length=MAX_TEXT)] | Annotated[list[UserPart], Field(max_length=100)]
    name: str | None = Field(None, max_length=200)


class AssistantMessage(IgnoringModel):
    role: Literal["assistant"]
    content: Content | None = None
    name: str | None = Field(None, max_length=200)


class ToolMessage(IgnoringModel):
    role: Literal["tool"]
    content: Content
    tool_call_id: str = Field("", max_length=200)


Message = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class StreamOptions(IgnoringModel):
    include_usage: StrictBool = Field(False, description="A last chunk with the usage and no choices")


class ChatCompletionIn(IgnoringModel):
    """A chat completion request. ``model`` is a corpus the key may read, optionally with a search profile:
    ``docs`` (all the corpus's spaces) or ``docs:bm25`` / ``docs:text+bm25`` (only those spaces)."""

    model: str = Field(..., min_length=1, max_length=200,
                       description="corpus or corpus:space+space (spaces: text, bm25, clip, colpali, document); "
                                   "a corpus the key cannot read is 404 model_not_found")
    messages: list[Message] = Field(..., min_length=1, max_length=MAX_MESSAGES,
                                    description="The conversation; the last user message with text (or an image) "
                                                "is the question")
    stream: StrictBool | None = Field(False, description="true: chat.completion.chunk events over SSE, then [DONE]")
    stream_options: StreamOptions | None = None
    max_tokens: Tokens | None = Field(None, description="Cap on generated tokens (deprecated name)")
    max_completion_tokens: Tokens | None = Field(None, description="Cap on generated tokens")
    temperature: Temperature | None = Field(None, description="Sampling temperature (0: greedy)")
    stop: Annotated[str, Field(min_length=1, max_length=200)] | Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=4)] | None = Field(
        None, description="Up to 4 sequences; the answer ends before the first of them")
    n: OnlyOne | None = Field(None, description="Choices to return: only 1")
    user: str | None = Field(None, max_length=200, description="Ignored (OpenAI's end-user id)")


class UrlCitation(BaseModel):
    url: str = Field(..., description="The cited page's image")
    title: str = Field(..., description="File name and page number")
    start_index: int = Field(..., description="Where the [n] marker of the page starts in the content")
    end_index: int


class Annotation(BaseModel):
    type: Literal["url_citation"] = "url_citation"
    url_citation: UrlCitation


class ChatCitation(BaseModel):
    """A cited page (mmrag's extra, beside OpenAI's annotations)."""

    n: int = Field(..., description="The [n] of the answer")
    document_id: str
    filename: str
    page: int = Field(..., description="1-based page number")
    page_id: str
    url: str = Field(..., description="The page's image")


class AssistantOut(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str
    refusal: None = None
    annotations: list[Annotation] = []


class ChoiceOut(BaseModel):
    index: int = 0
    message: AssistantOut
    finish_reason: Literal["stop", "length"]
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int = Field(..., description="The VLM's prompt tokens (visual included); extractive: the "
                                                "retrieval query's words")
    completion_tokens: int = Field(..., description="Generated tokens; extractive: the answer's words")
    total_tokens: int


class MmragExtras(BaseModel):
    citations: list[ChatCitation] = Field(default_factory=list, description="The pages the answer cites")
    mode: Literal["vlm", "extractive"] = Field("vlm", description="extractive: no VLM; the answer quotes snippets")
    notice: str = Field("", description="Why the answer is extractive, when it is")


class ChatCompletionOut(MmragExtras):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChoiceOut]
    usage: CompletionUsage
    system_fingerprint: str | None = None


class DeltaOut(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    annotations: list[Annotation] | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: DeltaOut
    finish_reason: Literal["stop", "length"] | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    """One SSE event of a streamed answer (``data: <chunk>``; the stream ends with ``data: [DONE]``). The
    chunk with ``finish_reason`` carries the annotations and mmrag's ``citations``, ``mode`` and ``notice``."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: CompletionUsage | None = None
    citations: list[ChatCitation] | None = None
    mode: Literal["vlm", "extractive"] | None = None
    notice: str | None = None


class ModelOut(BaseModel):
    id: str = Field(..., description="A corpus the key may read")
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "mmrag"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class OpenAIError(BaseModel):
    message: str
    type: str = Field(..., description="invalid_request_error, authentication_error, permission_error, "
                                       "rate_limit_error, server_error")
    param: str | None = None
    code: str | None = Field(None, description="e.g. model_not_found, invalid_api_key, rate_limit_exceeded")


class OpenAIErrorBody(BaseModel):
    """Every error of the /v1 routes has OpenAI's shape."""

    error: OpenAIError


def error_body(message: str, type_: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return OpenAIErrorBody(error=OpenAIError(message=message, type=type_, param=param, code=code)).model_dump()
