"""The vLLM backend's request contract against a fake OpenAI-compatible server on 127.0.0.1.

What this proves: body shape (image_url data URLs with stable ``uuid``s, stream + usage), SSE
parsing, error mapping, and our admission in front. What needs a GPU: a real ``vllm serve``.
"""

from __future__ import annotations

import pytest

from mmrag.errors import Overloaded, Unavailable
from mmrag.generate.base import GenerationRequest, RequestTimings, image_input
from mmrag.generate.engine import VLMEngine
from mmrag.generate.vllm_backend import VLLMBackend, family_of
from mmrag.vlm_config import VLMConfig
from tests.generate.conftest import png_bytes
from tests.generate.fake_openai_server import FakeVLLM, validate_chat_request


def config(url: str) -> VLMConfig:
    return VLMConfig(
        backend="vllm",
        model="Qwen/Qwen2.5-VL-7B-Instruct",
        vllm_url=url,
        request_timeout_s=10,
        queue_timeout_s=5,
    )


def test_streams_answer_with_stable_image_uuids() -> None:
    with FakeVLLM() as server:
        backend = VLLMBackend(config(server.url))
        engine = VLMEngine(backend, config(server.url))
        page = png_bytes(1654, 2339, seed=3)  # an A4 page at 200 dpi
        image = image_input(page, backend.accounting, 280)
        texts, uuids = [], []
        for rid in ("a", "b"):
            t = RequestTimings()
            texts.append("".join(engine.start(GenerationRequest(rid, "What is it?", [image], "sys", 16), t)))
            part = server.requests[-1]["messages"][-1]["content"][0]
            uuids.append(part["uuid"])
            assert (t.prompt_tokens, t.new_tokens, t.visual_tokens) == (321, 4, image.plan.tokens)
        assert texts == ["The answer is 42 [1]."] * 2
        assert uuids[0] == uuids[1] and len(server.seen_uuids) == 1  # same page -> same id -> vLLM cache hit
        body = server.requests[-1]
        assert body["model"] == "Qwen/Qwen2.5-VL-7B-Instruct" and body["max_tokens"] == 16
        assert body["messages"][0] == {"role": "system", "content": "sys"}
        assert validate_chat_request(body) == []
        # the image was resized client-side to the planned size: the server's smart_resize keeps it
        import base64
        import io

        from PIL import Image

        url = body["messages"][-1]["content"][0]["image_url"]["url"]
        sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        assert sent.size == (image.plan.resized_width, image.plan.resized_height)
        assert image.plan.tokens <= 280
        other = image_input(page, backend.accounting, 560)  # another budget -> another uuid
        assert backend.cache_key(other).digest() != uuids[0]
        engine.close()


def test_validator_rejects_a_missing_uuid() -> None:
    body = {
        "model": "m",
        "stream": True,
        "max_tokens": 4,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}],
            }
        ],
    }
    with pytest.raises(Exception):  # noqa: B017 - invalid PNG bytes are also refused
        validate_chat_request(body)
    body["messages"][0]["content"] = [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]
    assert "image_url part needs a stable uuid" in validate_chat_request(body)


def test_server_busy_maps_to_overloaded_and_down_to_unavailable() -> None:
    with FakeVLLM(status=503, retry_after="7") as server:
        backend = VLLMBackend(config(server.url))
        with pytest.raises(Overloaded) as err:
            list(backend.generate(GenerationRequest("a", "hi"), [], RequestTimings()))
        assert err.value.retry_after == 7.0
    backend = VLLMBackend(config("http://127.0.0.1:9/v1"))
    with pytest.raises(Unavailable, match="not reachable"):
        list(backend.generate(GenerationRequest("a", "hi"), [], RequestTimings()))


def test_family_from_hub_id() -> None:
    assert family_of("Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2_5_vl"
    assert family_of("HuggingFaceTB/SmolVLM-Instruct") == "smolvlm"
    assert family_of("google/paligemma-3b-mix-448") == "paligemma"
