"""A fake OpenAI-compatible (vLLM) chat server on 127.0.0.1 that validates the request shape.

It checks what vLLM's ``/v1/chat/completions`` needs from us (model, messages with ``image_url``
data-URL parts carrying a ``uuid``, ``stream: true``) and streams SSE chunks back in the format
vLLM emits (``chat.completion.chunk`` objects, a usage chunk, ``data: [DONE]``).
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

DATA_URL = re.compile(r"^data:image/(png|jpeg);base64,([A-Za-z0-9+/=]+)$")


def validate_chat_request(body: dict[str, Any]) -> list[str]:
    """Problems with a chat request body (empty when it is what vLLM accepts)."""
    problems = []
    if not isinstance(body.get("model"), str):
        problems.append("model must be a string")
    if body.get("stream") is not True:
        problems.append("stream must be true")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        problems.append("max_tokens must be a positive int")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or messages[-1].get("role") != "user":
        return [*problems, "messages must end with a user message"]
    for part in messages[-1]["content"]:
        if part.get("type") == "text":
            if not isinstance(part.get("text"), str):
                problems.append("text part without text")
        elif part.get("type") == "image_url":
            m = DATA_URL.match((part.get("image_url") or {}).get("url", ""))
            if not m:
                problems.append("image_url.url must be a base64 data URL")
            else:
                Image.open(io.BytesIO(base64.b64decode(m.group(2)))).verify()
            if not isinstance(part.get("uuid"), str) or not part["uuid"]:
                problems.append("image_url part needs a stable uuid")
        else:
            problems.append(f"unknown content part type {part.get('type')!r}")
    return problems


class FakeVLLM:
    """Start with ``with FakeVLLM() as server:``; ``server.url`` ends in /v1; ``requests`` are logged."""

    def __init__(self, reply: list[str] | None = None, status: int = 200, retry_after: str = "3") -> None:
        self.reply = reply or ["The ", "answer ", "is ", "42 [1]."]
        self.status, self.retry_after = status, retry_after
        self.requests: list[dict[str, Any]] = []
        self.seen_uuids: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if self.path != "/v1/chat/completions":
                    return self._json(404, {"error": "not found"})
                if outer.status != 200:
                    self.send_response(outer.status)
                    self.send_header("Retry-After", outer.retry_after)
                    self.end_headers()
                    return None
                problems = validate_chat_request(body)
                if problems:
                    return self._json(400, {"error": {"message": "; ".join(problems)}})
                for part in body["messages"][-1]["content"]:
                    if part["type"] == "image_url":
                        outer.seen_uuids.add(part["uuid"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for i, text in enumerate(outer.reply):
                    chunk = {
                        "id": "c1",
                        "object": "chat.completion.chunk",
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"content": text} if i else {"role": "assistant", "content": text},
                                "finish_reason": None,
                            }
                        ],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                usage = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"prompt_tokens": 321, "completion_tokens": len(outer.reply)},
                }
                self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
                return None

            def _json(self, status: int, obj: object) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeVLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
