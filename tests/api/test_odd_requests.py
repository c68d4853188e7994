"""Odd and malformed requests on every route get their own refusal (status, code, a message naming what was
wrong), never a 5xx, and the server stays up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.embed.base import load_embedder
from mmrag.pipeline import build_pipeline

# (method, url, request, status, error code, what the message names). 422 invalid_request: the body,
# query or form breaks the schema; 400 invalid_input: it fits the schema and the server refuses it.
ODD_REQUESTS = [
    ("post", "/corpora", {"json": {"name": ""}}, 422, "invalid_request", "body.name"),
    # a corpus's spaces are checked by the pipeline (the enum in the OpenAPI is added by api/contract.py)
    ("post", "/corpora", {"json": {"name": "x", "config": {"spaces": ["nope"]}}}, 400, "invalid_input",
     "unknown spaces ['nope']; allowed"),
    ("post", "/corpora", {"json": {"name": "y", "config": {"pool_factor": 0}}}, 422, "invalid_request",
     "body.config.pool_factor"),
    ("post", "/corpora", {"content": b"not json", "headers": {"content-type": "application/json"}}, 422,
     "invalid_request", "JSON decode error"),
    ("post", "/corpora/d/documents", {}, 422, "invalid_request", "body.files: Field required"),
    ("post", "/corpora/d/documents", {"files": [("files", ("a.pdf", b"%PDF-1.4 x"))], "data": {"metadata": "[1,2]"}},
     400, "invalid_input", "metadata must be a JSON object of field -> value"),
    ("post", "/corpora/d/documents", {"files": [("files", ("a.pdf", b"%PDF-1.4 junk"))], "data": {"metadata": "{bad"}},
     400, "invalid_input", "metadata must be a JSON object: Expecting property name"),
    ("post", "/corpora/d/documents", {"files": [("other", ("a.pdf", b"x"))]}, 422, "invalid_request",
     "body.files: Field required"),
    ("post", "/corpora/d/search", {"json": {"query": "x", "metadata": {"a": {"b": 1}}}}, 422, "invalid_request",
     "body.metadata.a"),
    ("post", "/corpora/d/search", {"json": {"query": "x", "metadata": {"a b": 1}}}, 422, "invalid_request",
     "body.metadata.a b.[key]: String should match pattern '^[A-Za-z0-9_-]+"),  # the schema's propertyNames
    ("post", "/corpora/d/search", {"json": {"query": "x", "weights": {"text": -1}}}, 422, "invalid_request",
     "body.weights.text"),
    ("post", "/corpora/d/search", {"json": {"query": "x", "fusion": "dbsf", "weights": {"text": 2}}}, 400,
     "invalid_input", "weights apply to fusion 'rrf' only"),
    ("post", "/corpora/d/search", {"json": {"query": "x", "image_page_id": "nope"}}, 422, "invalid_request",
     "body.image_page_id"),
    ("post", "/corpora/d/search", {"json": {"query": "x", "kinds": []}}, 422, "invalid_request", "body.kinds"),
    ("post", "/corpora/d/search/image", {"files": [("image", ("a.png", b"junk"))]}, 409, "conflict",
     "image queries need clip or colpali"),  # a corpus without an image space
    ("post", "/corpora/d/answer", {"json": {"question": ""}}, 422, "invalid_request", "body.question"),
    ("post", "/corpora/d/answer", {"json": {"question": "x", "top_k": 0}}, 422, "invalid_request", "body.top_k"),
    ("get", "/jobs/nope", {}, 404, "not_found", "unknown job 'nope'"),
    ("post", "/jobs/nope/cancel", {}, 404, "not_found", "unknown job 'nope'"),
    ("get", "/jobs/nope/events", {}, 404, "not_found", "unknown job 'nope'"),
    ("get", "/corpora/d/pages/x/image?width=5", {}, 422, "invalid_request", "query.width"),
    ("get", "/corpora/d/documents?limit=0", {}, 422, "invalid_request", "query.limit"),
    ("get", "/evaluations/nope", {}, 404, "not_found", "unknown evaluation 'nope'"),
    ("post", "/evaluations", {"json": {"suite": "../../etc"}}, 422, "invalid_request", "body.suite"),
    # encoded: the client cannot normalise it
    ("get", "/evaluations/nope/files/..%2F..%2Fcatalog.sqlite3", {}, 404, "not_found", "unknown evaluation 'nope'"),
    ("delete", "/corpora/nope", {}, 404, "not_found", "unknown corpus 'nope'"),
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


@pytest.mark.parametrize("method,url,kwargs,status,error,names", ODD_REQUESTS)
def test_odd_requests_get_their_own_refusal(odd_client, method, url, kwargs, status, error, names):
    r = getattr(odd_client, method)(url, **kwargs)
    body = r.json()
    assert (r.status_code, body["error"]) == (status, error), r.text
    assert names in body["message"], body
    assert odd_client.get("/health").json()["status"] == "ok"


@pytest.mark.parametrize("method,url,kwargs", ODD_BUT_VALID)
def test_odd_but_valid_requests_succeed(odd_client, method, url, kwargs):
    r = getattr(odd_client, method)(url, **kwargs)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body.get("results") == [] or body.get("citations") == [], body
