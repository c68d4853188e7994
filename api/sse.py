"""Server-sent events: the one framing of every stream the API sends (answers, job progress, and OpenAI's
unnamed ``data:`` events of a chat completion)."""

from __future__ import annotations

import json
from typing import Any

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffering of the stream


def sse_event(name: str, data: Any) -> str:
    """``event: <name>\\ndata: <json>\\n\\n`` (data is one JSON line, so a newline in it cannot end the event)."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


SSE_DONE = "data: [DONE]\n\n"  # the end of an OpenAI stream


def sse_data(data: Any) -> str:
    """``data: <json>\\n\\n`` with no event name: OpenAI's framing of a chat completion chunk."""
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
