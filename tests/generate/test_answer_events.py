"""Answer events: their one JSON form, read back typed (the REST side), and the final event of a stream."""

from __future__ import annotations

import json

import pytest

from mmrag.errors import InvalidInput, MMRAGError, Overloaded
from mmrag.generate.answer_events import (
    AnswerDone,
    AnswerError,
    Citation,
    EvidenceSelected,
    TokenDelta,
    event_of,
    event_payload,
    final_event,
)
from mmrag.generate.conversation import Usage

CITE = Citation(1, "d1", "alpha.pdf", 1, "p1", 64)
DONE = AnswerDone("done", "1868 [1]", "vlm", [CITE], {"total": 0.5}, "a notice", Usage(10, 2), "length")
STREAM = [EvidenceSelected("evidence", [CITE], 64, 2), TokenDelta("token", "1868"), DONE]


def test_the_json_form_of_the_done_event() -> None:
    assert event_payload(DONE) == ("done", {
        "answer": "1868 [1]", "mode": "vlm", "timings": {"total": 0.5}, "notice": "a notice",
        "citations": [{"n": 1, "document_id": "d1", "filename": "alpha.pdf", "page": 1, "page_id": "p1",
                       "visual_tokens": 64}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "unit": "tokens"}, "finish_reason": "length"})


@pytest.mark.parametrize("event", [*STREAM, AnswerError("error", "overloaded", "busy", 3.0)])
def test_every_event_reads_back_equal_through_json(event: object) -> None:
    name, data = event_payload(event)  # type: ignore[arg-type]
    assert event_of(name, json.loads(json.dumps(data))) == event


def test_a_pair_that_is_no_answer_event_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not an answer event: 'ping'"):
        event_of("ping", {})
    with pytest.raises(InvalidInput, match="fields that are not its own"):
        event_of("token", {"text": "x", "colour": "red"})


def test_final_event_returns_done_and_raises_the_error_event() -> None:
    assert final_event(STREAM) is DONE
    with pytest.raises(Overloaded, match="busy") as caught:
        final_event([AnswerError("error", "overloaded", "busy", 3.0)])
    assert caught.value.retry_after == 3.0
    with pytest.raises(MMRAGError, match="without a final event"):
        final_event([TokenDelta("token", "x")])
