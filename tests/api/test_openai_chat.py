"""/v1/chat/completions and /v1/models driven by the official ``openai`` package against a live `mmrag serve`
(tests/api/tenants.py: keys required, two tenants, a tiny VLM with real token counts), and the extractive
answer and the wire framing in-process."""

from __future__ import annotations

import base64
import json

import httpx
import openai
import pytest

from tests.api.tenants import Tenants

pytestmark = pytest.mark.integration
FIRST_QUESTION = "What was the revenue of the heron ledger in 2020?"


def chat(t: Tenants, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{t.url}/v1", api_key=key, max_retries=0, timeout=120)


def cited(completion: object) -> list[str]:
    return [c["filename"] for c in (completion.model_extra or {})["citations"]]  # type: ignore[attr-defined]


def test_models_are_the_corpora_the_key_may_read(tenants: Tenants) -> None:
    assert [m.id for m in chat(tenants, tenants.docs_key).models.list()] == ["docs"]
    assert [m.id for m in chat(tenants, tenants.other_key).models.list()] == ["other"]
    assert sorted(m.id for m in chat(tenants, tenants.admin).models.list()) == ["docs", "other"]


def test_a_completion_cites_pages_and_counts_the_engine_tokens(tenants: Tenants) -> None:
    client = chat(tenants, tenants.docs_key)
    completion = client.chat.completions.create(
        model="docs", max_tokens=4, temperature=0,
        messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": FIRST_QUESTION}],
        extra_body={"frobnicate": True, "top_p": 0.5})  # fields mmrag does not know are ignored, as OpenAI does
    message = completion.choices[0].message
    assert completion.object == "chat.completion" and completion.model == "docs" and message.role == "assistant"
    assert isinstance(message.content, str) and completion.model_extra["mode"] == "vlm"
    assert cited(completion)[0] == "heron.pdf"
    first = message.annotations[0]
    assert first.type == "url_citation" and first.url_citation.title == "heron.pdf p.1"
    assert first.url_citation.url == f"{tenants.url}/corpora/docs/pages/{tenants.docs_pages['heron.pdf']}/image"
    image = httpx.get(first.url_citation.url, headers={"Authorization": f"Bearer {tenants.docs_key}"}, timeout=60)
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    usage = completion.usage
    assert usage is not None and 1 <= usage.completion_tokens <= 4
    assert usage.prompt_tokens > 2 * 32 and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert completion.choices[0].finish_reason == ("length" if usage.completion_tokens == 4 else "stop")


def test_a_streamed_completion_arrives_in_chunks_then_done(tenants: Tenants) -> None:
    client = chat(tenants, tenants.docs_key)
    chunks = list(client.chat.completions.create(
        model="docs", stream=True, stream_options={"include_usage": True}, max_completion_tokens=3,
        messages=[{"role": "user", "content": FIRST_QUESTION}]))
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    delta = finishing[0].choices[0].delta  # the SDK keeps a field its delta type lacks as an extra
    assert len(finishing) == 1 and delta.model_extra["annotations"][0]["type"] == "url_citation"
    assert cited(finishing[0])[0] == "heron.pdf"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens <= 3
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage.completion_tokens >= 1 and isinstance(text, str)


def test_the_stream_is_framed_as_openai_frames_it(tenants: Tenants) -> None:
    r = httpx.post(f"{tenants.url}/v1/chat/completions", timeout=120,
                   headers={"Authorization": f"Bearer {tenants.docs_key}"},
                   json={"model": "docs", "stream": True, "max_tokens": 2,
                         "messages": [{"role": "user", "content": FIRST_QUESTION}]})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = r.text.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    assert all(e.startswith("data: {") and "\n" not in e for e in events[:-2])  # no event names, one line each
    assert json.loads(events[0][6:])["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_a_follow_up_is_searched_with_the_earlier_turns(tenants: Tenants) -> None:
    client = chat(tenants, tenants.docs_key)
    follow_up = "And in 2021?"
    alone = client.chat.completions.create(model="docs", max_tokens=1,
                                           messages=[{"role": "user", "content": follow_up}])
    assert cited(alone)[0] == "zebra.pdf"  # the almanac says 2021 most
    turns = client.chat.completions.create(model="docs", max_tokens=1, messages=[
        {"role": "user", "content": FIRST_QUESTION}, {"role": "assistant", "content": "42 million euros [1]."},
        {"role": "user", "content": follow_up}])
    assert cited(turns)[0] == "heron.pdf"
    assert turns.usage.prompt_tokens > alone.usage.prompt_tokens  # the generator read the conversation too


def test_an_image_part_is_a_query_image(tenants: Tenants) -> None:
    page = tenants.docs_pages["zebra.pdf"]
    png = httpx.get(f"{tenants.url}/corpora/docs/pages/{page}/image", timeout=60,
                    headers={"Authorization": f"Bearer {tenants.docs_key}"}).content
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    content = [{"type": "text", "text": "Which page is this?"}, {"type": "image_url", "image_url": {"url": url}}]
    client = chat(tenants, tenants.docs_key)
    completion = client.chat.completions.create(model="docs:clip", max_tokens=1,
                                                messages=[{"role": "user", "content": content}])
    assert completion.model_extra["citations"][0]["page_id"] == page  # the same image: the nearest in CLIP
    with pytest.raises(openai.BadRequestError, match="image space"):
        client.chat.completions.create(model="docs:bm25", messages=[{"role": "user", "content": content}])
    web = [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    with pytest.raises(openai.BadRequestError, match=r"url: String should match pattern .\^data:image"):
        client.chat.completions.create(model="docs:clip", messages=[{"role": "user", "content": web}])


def test_errors_are_raised_as_openai_raises_them(tenants: Tenants) -> None:
    client = chat(tenants, tenants.docs_key)
    ask = [{"role": "user", "content": "What is the launch code?"}]
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="other", messages=ask)  # another tenant's corpus
    assert missing.value.code == "model_not_found" and missing.value.param == "model"
    assert "7781" not in str(missing.value.body) and "nightjar" not in str(missing.value.body)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="nonexistent", messages=ask)
    assert str(unknown.value.body["message"]).replace("nonexistent", "other") == missing.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        chat(tenants, tenants.other_key).chat.completions.create(model="docs", messages=ask)
    with pytest.raises(openai.AuthenticationError) as bad_key:
        chat(tenants, "mmrag_nope_nope").chat.completions.create(model="docs", messages=ask)
    assert bad_key.value.body["type"] == "authentication_error"
    with pytest.raises(openai.BadRequestError) as hot:
        client.chat.completions.create(model="docs", messages=ask, temperature=5)
    assert hot.value.param == "temperature" and hot.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError, match="no user message"):
        client.chat.completions.create(model="docs", messages=[{"role": "system", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="unknown search space"):
        client.chat.completions.create(model="docs:colour", messages=ask)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="docs", messages=ask, n=2)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="docs", messages=ask, max_tokens=100_000)


def test_without_a_vlm_the_extractive_answer_comes_back_the_same_way(client) -> None:
    assert client.post("/corpora", json={"name": "docs"}).status_code == 201
    from tests.api.tenants import DOCS, pdf

    r = client.post("/corpora/docs/documents", params={"wait": "true"},
                    files=[("files", (name, pdf(text))) for name, text in DOCS.items()])
    assert r.status_code == 201, r.text
    ask = {"model": "docs:bm25", "messages": [{"role": "user", "content": "heron ledger revenue"}], "stop": ["2021"]}
    body = client.post("/v1/chat/completions", json=ask).json()
    answer = body["choices"][0]["message"]["content"]
    assert body["mode"] == "extractive" and "extractive answer" in body["notice"]
    assert answer.startswith("[1] Heron ledger annual report") and "2021" not in answer  # cut at the stop
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": len(answer.split()),
                             "total_tokens": 3 + len(answer.split())}  # words: no model read or wrote anything
    stream = client.post("/v1/chat/completions", json={**ask, "stream": True}).text
    chunks = [json.loads(e[6:]) for e in stream.split("\n\n") if e.startswith("data: {")]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == answer
    assert chunks[-1]["notice"] == body["notice"] and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert stream.endswith("data: [DONE]\n\n")


def test_limits_answer_in_openai_shape(client) -> None:
    settings = client.app.state.settings
    settings.retrieve.max_query_image_bytes = 3000  # the route's body limit: a data URL of that + 256 KiB
    big = "x" * (4000 + 300 * 1024)
    r = client.post("/v1/chat/completions", json={"model": "docs", "messages": [{"role": "user", "content": big}]})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    r = client.get("/v1/chat/completions")
    assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"
    padded = b"{" + b" " * (4000 + 300 * 1024) + b"}"
    r = client.post("/mcp", content=padded, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"] == "too_large"  # /mcp: the search tool's image, as /search


def test_the_rate_of_a_key_is_a_rate_limit_error(settings, minilm) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from mmrag.pipeline import build_pipeline

    settings.api.auth, settings.api.rate_per_key, settings.api.rate_burst = "required", 0.01, 2
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as http:
        key = http.app.state.auth.keys.create("admin").secret
        client = openai.OpenAI(base_url="http://testserver/v1", api_key=key, http_client=http, max_retries=0)
        assert [m.id for m in client.models.list()] == []
        client.models.list()
        with pytest.raises(openai.RateLimitError) as limited:
            client.models.list()
        assert limited.value.code == "rate_limit_exceeded" and "MMRAG_API__RATE_PER_KEY" in limited.value.message
        assert int(limited.value.response.headers["retry-after"]) >= 1
    pipeline.close()


def test_the_chat_route_is_in_the_openapi_document_with_openai_errors(client) -> None:
    schema = client.get("/openapi.json").json()
    op = schema["paths"]["/v1/chat/completions"]["post"]
    assert op["security"] == [{"bearer": []}] and {"400", "401", "403", "404", "413", "429"} <= set(op["responses"])
    for code, answer in op["responses"].items():
        if code.startswith(("4", "5")):
            assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/OpenAIErrorBody"}
    ok = op["responses"]["200"]["content"]
    chunk = ok["text/event-stream"]["schema"]["properties"]["data"]["anyOf"][1]["contentSchema"]["anyOf"][0]
    assert chunk["$ref"].endswith("/ChatCompletionChunk")
    assert ok["application/json"]["schema"]["$ref"].endswith("/ChatCompletionOut")
    models = schema["components"]["schemas"]
    assert models["ChatCompletionIn"]["properties"]["messages"]["contains"]["properties"]["role"] == {"const": "user"}
    assert "ImagePart" not in models  # this server has no image space: a user message holds text only
    assert "/mcp" not in schema["paths"] and "/v1/models" in schema["paths"]
