"""The events of an answer, typed, and their one JSON form.

An answer is a stream: :class:`EvidenceSelected` (the pages sent to the model and their visual-token cost),
:class:`TokenDelta` (text as it is generated, zero or more), then :class:`AnswerDone` (the answer, ``mode``
"vlm" | "extractive", citations, timings) or :class:`AnswerError` (the VLM failed after streaming began).

:func:`event_payload` turns an event into its ``(name, data)`` pair, the one JSON form of an answer event
(the SSE stream, the JSON answer); :func:`event_of` reads such a pair back (the REST client's side), so every
door reads typed events whether the answer ran in this process or on a server. :func:`final_event` is the
``done`` event of a stream, raising the error of an ``error`` event. Light: no model code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from mmrag.errors import InvalidInput, MMRAGError, error_for_code
from mmrag.generate.conversation import Usage


@dataclass(frozen=True, slots=True)
class Citation:
    """A page an answer rests on."""

    n: int  # 1-based number used in the prompt and in "[n]" markers
    document_id: str
    filename: str
    page: int  # 1-based
    page_id: str
    visual_tokens: int = 0  # cost of this page image (0 for text-only evidence)


@dataclass(frozen=True, slots=True)
class EvidenceSelected:
    event: Literal["evidence"]
    pages: list[Citation]  # in prompt order
    visual_tokens: int  # sum over pages, <= the request's visual-token budget
    dropped: int  # retrieved pages left out by the budget


@dataclass(frozen=True, slots=True)
class TokenDelta:
    event: Literal["token"]
    text: str


@dataclass(frozen=True, slots=True)
class AnswerDone:
    event: Literal["done"]
    answer: str
    mode: Literal["vlm", "extractive"]
    citations: list[Citation]  # pages cited with [n] (all given pages when none is marked)
    timings: dict[str, float] = field(default_factory=dict)
    notice: str = ""  # e.g. why the answer is extractive
    usage: Usage = field(default_factory=lambda: Usage(0, 0))  # what was read and written (see Usage)
    finish_reason: Literal["stop", "length"] = "stop"  # length: generation reached max_new_tokens


@dataclass(frozen=True, slots=True)
class AnswerError:
    event: Literal["error"]
    code: str  # MMRAGError.code, e.g. "overloaded"
    message: str
    retry_after: float | None = None


AnswerEvent = EvidenceSelected | TokenDelta | AnswerDone | AnswerError


AnswerPayload = tuple[str, dict[str, Any]]  # (event name, its fields as JSON-ready data)


def event_payload(event: AnswerEvent) -> AnswerPayload:
    """The event's name and its fields (without the ``event`` tag) as plain data."""
    return event.event, {k: v for k, v in asdict(event).items() if k != "event"}


_EVENTS: dict[str, type[Any]] = {"evidence": EvidenceSelected, "token": TokenDelta, "done": AnswerDone,
                                 "error": AnswerError}


def event_of(name: str, data: dict[str, Any]) -> AnswerEvent:
    """The typed event of an ``(event, data)`` pair of the JSON form (the inverse of :func:`event_payload`);
    InvalidInput for a name or fields that are not an answer event's."""
    kind = _EVENTS.get(name)
    if kind is None:
        raise InvalidInput(f"not an answer event: {name!r} (events: {', '.join(_EVENTS)})")
    fields = dict(data)
    try:
        if "citations" in fields:
            fields["citations"] = [Citation(**c) for c in fields["citations"]]
        if "pages" in fields:
            fields["pages"] = [Citation(**c) for c in fields["pages"]]
        if isinstance(fields.get("usage"), dict):
            fields["usage"] = Usage(**fields["usage"])
        event: AnswerEvent = kind(event=name, **fields)
    except TypeError as exc:
        raise InvalidInput(f"answer event {name!r} has fields that are not its own: {exc}") from exc
    return event


def final_event(events: Iterable[AnswerEvent]) -> AnswerDone:
    """The ``done`` event of a stream; an ``error`` event raises its error class (``Overloaded`` for
    ``overloaded``, ...)."""
    for event in events:
        if isinstance(event, AnswerError):
            raise error_for_code(event.code, f"answer failed: {event.message}", fallback=MMRAGError,
                                 retry_after=event.retry_after)
        if isinstance(event, AnswerDone):
            return event
    raise MMRAGError("the answer stream ended without a final event")
