"""Schema-valid requests that a corpus or this server cannot serve, and uploads whose declared type lies
(issue 28): each refusal is a 4xx saying what was wrong and what is allowed, and is listed in the route's
OpenAPI responses; a request the schema allows is never refused as malformed (400)."""

from __future__ import annotations

import base64
import io

import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from api.app import create_app
from mmrag.embed.base import load_embedder
from mmrag.embed.lazy import LazyEmbedder
from mmrag.pipeline import build_pipeline

HUB = ("We couldn't connect to 'https://huggingface.co' to load the files.\nCheck your internet connection or "
       "see 'https://huggingface.co/docs/transformers/installation#offline-mode'.\n/root/.cache/huggingface/hub")


def _broken_clip() -> LazyEmbedder:
    def load() -> LazyEmbedder:
        raise OSError(HUB)

    return LazyEmbedder("open_clip:ViT-B-32/laion2b", load, lambda reason: None)


@pytest.fixture()
def client(settings):
    settings.embed.text_model = "fake:384"
    settings.embed.clip_model = "fake:8"
    embedders = {"text": load_embedder("fake:384"), "clip": load_embedder("fake:8")}
    pipeline = build_pipeline(settings, embedders=embedders)
    with TestClient(create_app(settings, pipeline)) as c:
        assert c.post("/corpora", json={"name": "words", "config": {"spaces": ["text", "bm25"]}}).status_code == 201
        yield c
    pipeline.close()


def _documented(client: TestClient, method: str, path: str) -> set[str]:
    return set(client.get("/openapi.json").json()["paths"][path][method]["responses"])


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 10, 10)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


@pytest.mark.parametrize(("body", "words"), [
    ({"query": "", "image_base64": "IMAGE"}, "image queries need clip or colpali"),  # a corpus without an image space
    ({"query": "x", "spaces": ["clip"]}, "not available for this corpus; it has: ['text', 'bm25']"),
    ({"query": "x", "weights": {"clip": 2}}, "which this corpus does not have; it has: ['text', 'bm25']"),
])
def test_what_the_corpus_lacks_is_a_documented_409(client, body, words):
    body = {k: (_png() if v == "IMAGE" else v) for k, v in body.items()}
    r = client.post("/corpora/words/search", json=body)
    assert r.status_code == 409 and words in r.json()["message"] and r.json()["error"] == "conflict", r.text
    assert "409" in _documented(client, "post", "/corpora/{corpus}/search")


def test_the_document_space_alone_is_outside_the_schema(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchIn"]["properties"]["spaces"]
    assert schema["contains"] == {"enum": ["text", "bm25", "clip", "colpali"]}
    r = client.post("/corpora/words/search", json={"query": "x", "spaces": ["document"]})
    assert r.status_code == 422 and "name a page space too" in r.json()["message"], r.text
    r = client.post("/corpora/words/search", json={"query": "x", "spaces": ["document", "bm25"]})
    assert r.status_code == 409 and "['document']" in r.json()["message"], r.text  # this corpus lacks it


def test_a_space_whose_model_cannot_load_is_a_409_without_the_hubs_text(settings):
    settings.embed.text_model = "fake:384"
    pipeline = build_pipeline(settings, embedders={"text": load_embedder("fake:384"), "clip": _broken_clip()})
    try:
        with TestClient(create_app(settings, pipeline)) as client:
            r = client.post("/corpora", json={"name": "pics", "config": {"spaces": ["clip"]}})
            assert "409" in _documented(client, "post", "/corpora")
    finally:
        pipeline.close()
    assert r.status_code == 409, r.text
    message = r.json()["message"]
    assert "clip: its model 'open_clip:ViT-B-32/laion2b' could not be loaded on this server" in message, message
    assert "\n" not in message and "huggingface" not in message and "/root" not in message, message


def test_an_upload_whose_declared_type_is_not_its_content_is_a_415(client):
    r = client.post("/corpora/words/documents", files=[("files", ("upload", b"{}", "application/pdf"))])
    assert r.status_code == 415, r.text
    [error] = r.json()["errors"]
    assert error["error"] == "unsupported_media_type", error
    assert "declared as application/pdf but its content is text/plain" in error["message"]
    assert "allowed:" in error["message"] and "415" in _documented(client, "post", "/corpora/{corpus}/documents")
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A real PDF declared as one")
    for declared in ("application/pdf", "application/octet-stream"):
        ok = client.post("/corpora/words/documents", files=[("files", ("upload", doc.tobytes(), declared))])
        assert ok.status_code == 202, ok.text
    text = client.post("/corpora/words/documents", files=[("files", ("notes", b"plain words", "text/plain"))])
    assert text.status_code == 202, text.text
