"""Odd and malformed requests on every route get a clear 4xx (never a 5xx), and the server stays up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.embed.base import load_embedder
from mmrag.pipeline import build_pipeline

ODD_REQUESTS = [
    ("post", "/corpora", {"json": {"name": ""}}),
    ("post", "/corpora", {"json": {"name": "x", "config": {"spaces": ["nope"]}}}),
    ("post", "/corpora", {"json": {"name": "y", "config": {"pool_factor": 0}}}),
    ("post", "/corpora", {"content": b"not json", "headers": {"content-type": "application/json"}}),
    ("post", "/corpora/d/documents", {}),
    ("post", "/corpora/d/documents", {"files": [("files", ("a.pdf", b"%PDF-1.4 x"))], "data": {"metadata": "[1,2]"}}),
    ("post", "/corpora/d/documents", {"files": [("files", ("a.pdf", b"%PDF-1.4 junk"))], "data": {"metadata": "{bad"}}),
    ("post", "/corpora/d/documents", {"files": [("other", ("a.pdf", b"x"))]}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "metadata": {"a": {"b": 1}}}}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "weights": {"text": -1}}}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "fusion": "dbsf", "weights": {"text": 2}}}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "image_page_id": "nope"}}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "kinds": []}}),
    ("post", "/corpora/d/search/image", {"files": [("image", ("a.png", b"junk"))]}),
    ("post", "/corpora/d/answer", {"json": {"question": ""}}),
    ("post", "/corpora/d/answer", {"json": {"question": "x", "top_k": 0}}),
    ("get", "/jobs/nope", {}), ("post", "/jobs/nope/cancel", {}), ("get", "/jobs/nope/events", {}),
    ("get", "/corpora/d/pages/x/image?width=5", {}),
    ("get", "/corpora/d/documents?limit=0", {}),
    ("get", "/evaluations/nope", {}), ("post", "/evaluations", {"json": {"suite": "../../etc"}}),
    ("get", "/evaluations/nope/files/..%2F..%2Fcatalog.sqlite3", {}),  # encoded: the client cannot normalise it
    ("delete", "/corpora/nope", {}),
]

ODD_BUT_VALID = [  # odd, yet nothing is wrong with them: a plain answer, no error
    ("post", "/corpora/d/search", {"json": {"query": "\x00\x01"}}),  # control characters: no match
    ("post", "/corpora/d/answer", {"json": {"question": "x", "stream": False}}),  # empty corpus: says so
    # schema-valid, so accepted (issue 21): an empty page range holds no page; a prefetch below top_k is top_k
    ("post", "/corpora/d/search", {"json": {"query": "x", "pages": {"first": 5, "last": 2}}}),
    ("post", "/corpora/d/search", {"json": {"query": "x", "prefetch_limit": 5, "top_k": 10}}),
]


@pytest.fixture(scope="module")
def odd_client(tmp_path_factory) -> Iterator[TestClient]:
    from tests.conftest import make_settings

    settings = make_settings(tmp_path_factory.mktemp("odd") / "data")
    pipeline = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    with TestClient(create_app(settings, pipeline), raise_server_exceptions=False) as client:
        assert client.post("/corpora", json={"name": "d"}).status_code == 201
        yield client
    pipeline.close()


@pytest.mark.parametrize("method,url,kwargs", ODD_REQUESTS)
def test_no_server_errors(odd_client, method, url, kwargs):
    r = getattr(odd_client, method)(url, **kwargs)
    assert 400 <= r.status_code < 500, r.text
    body = r.json()
    assert body["error"] and body["message"], body
    assert odd_client.get("/health").json()["status"] == "ok"


@pytest.mark.parametrize("method,url,kwargs", ODD_BUT_VALID)
def test_odd_but_valid_requests_succeed(odd_client, method, url, kwargs):
    r = getattr(odd_client, method)(url, **kwargs)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body.get("results") == [] or body.get("citations") == [], body
