"""The API's one SSE framing: an event name and one JSON data line, whatever the data holds."""

from __future__ import annotations

import json

from api.sse import sse_event
from mmrag.rest_client import sse_events


def test_sse_event_is_one_json_line_that_the_client_reads_back() -> None:
    text = sse_event("token", {"text": "Hé\nllo"})
    assert text.startswith("event: token\ndata: ") and text.endswith("\n\n") and text.count("\n") == 3
    assert json.loads(text.split("data: ", 1)[1]) == {"text": "Hé\nllo"}
    stream = text + sse_event("done", {"answer": "x\n\ny"})
    assert list(sse_events(stream.split("\n"))) == [("token", {"text": "Hé\nllo"}), ("done", {"answer": "x\n\ny"})]
