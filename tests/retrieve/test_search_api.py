"""REST contract of search: every option's bounds in the OpenAPI, 4xx for bad combinations,
the multipart image endpoint, and the options reaching the pipeline."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from api.routes.search import search_request
from api.schemas import SearchIn


def pdf_bytes(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for line in text.split("|"):
        doc.new_page().insert_text((72, 72), line)
    return doc.tobytes()


def png() -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((32, 32, 3), 200, dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture()
def loaded(client):
    assert client.post("/corpora", json={"name": "docs"}).status_code == 201
    pipeline = client.app.state.pipeline  # ingest in-process: uploads may be background jobs
    pipeline.ingest.file_bytes("docs", pdf_bytes("zebra stripes|flags of many nations|zebra crossing rules"), "a.pdf")
    return client


def test_openapi_documents_every_option_with_bounds(client):
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    props = schemas["SearchIn"]["properties"]
    for name in ("query", "image_base64", "image_page_id", "top_k", "spaces", "weights", "prefetch_limit", "rrf_k",
                 "document_ids", "metadata", "pages", "kinds", "explain"):
        assert name in props and props[name].get("description"), name
    assert props["top_k"]["maximum"] == 100 and props["rrf_k"]["anyOf"][0]["minimum"] == 1  # MAX_TOP_K
    assert props["prefetch_limit"]["anyOf"][0]["maximum"] == 1000  # MAX_PREFETCH_LIMIT (api/contract.py)
    assert schemas["PageRange"]["properties"]["first"]["minimum"] == 1
    # this server has no image space, so its contract offers no image upload (api/contract.py)
    assert "/corpora/{corpus}/search/image" not in spec["paths"]


@pytest.mark.parametrize("body,status,words", [
    ({"query": "x", "pages": {"first": 0, "last": 1}}, 422, "pages"),
    ({"query": "x", "rrf_k": 0}, 422, "rrf_k"),
    ({"query": "x", "kinds": ["video"]}, 422, "kinds"),
    ({"query": "x", "weights": {"text": 500}}, 422, "weights"),
    ({"query": "x", "weights": {"colpali": 1}}, 409, "weight"),  # a space this corpus lacks: 409
    ({"query": "x", "spaces": ["clip"]}, 409, "not available"),
    ({"query": "x", "spaces": ["document"]}, 422, "name a page space too"),
    ({"query": "x", "spaces": []}, 422, "spaces"),
    ({"image_page_id": "abc123"}, 409, "image queries need clip or colpali"),  # refused before the page is read
    ({"image_page_id": "not-hex"}, 422, "image_page_id"),
    ({"query": "", "image_base64": base64.b64encode(b"GIF89a broken").decode()}, 409, "was not decoded"),
    ({"query": "", "image_base64": base64.b64encode(png()).decode()}, 409, "image queries need clip or colpali"),
])
def test_bad_options_get_clear_4xx(loaded, body, status, words):
    r = loaded.post("/corpora/docs/search", json=body)
    assert r.status_code == status and words in r.json()["message"], (body, r.status_code, r.text)


def test_schema_valid_ranges_are_answered_not_refused(loaded):
    """An empty page range finds nothing; a prefetch limit below top_k is raised to top_k."""
    empty = loaded.post("/corpora/docs/search", json={"query": "zebra", "pages": {"first": 3, "last": 1}})
    assert empty.status_code == 200 and empty.json()["results"] == []
    raised = loaded.post("/corpora/docs/search", json={"query": "zebra", "top_k": 3, "prefetch_limit": 1})
    assert raised.status_code == 200 and len(raised.json()["results"]) == 3


def test_options_filter_and_explain(loaded):
    r = loaded.post("/corpora/docs/search", json={"query": "zebra", "pages": {"first": 2, "last": 3}, "top_k": 5,
                                                   "explain": True, "rrf_k": 1, "weights": {"bm25": 2},
                                                   "prefetch_limit": 20, "kinds": ["page"]})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert {x["page"] for x in results} == {2, 3}
    assert results[0]["page"] == 3 and set(results[0]["ranks"]) == {"text", "bm25"}
    assert results[0]["image_url"].endswith("/image") and "width=" in results[0]["thumbnail_url"]
    assert results[0]["boxes"] and results[0]["snippet"]


def test_image_upload_endpoint(loaded):
    files = {"image": ("q.png", png(), "image/png")}
    r = loaded.post("/corpora/docs/search/image", files=files, data={"options": '{"spaces": ["text"]}'})
    assert r.status_code == 409 and "image queries need clip or colpali" in r.json()["message"]
    r = loaded.post("/corpora/docs/search/image", files=files, data={"options": '{"top_k": 0}'})
    assert r.status_code == 400 and "options" in r.json()["message"]
    for image in (b"nope", png()):  # a text-only corpus: refused before the image is read or decoded
        r = loaded.post("/corpora/docs/search/image", files={"image": ("q.png", image, "image/png")},
                        data={"query": "zebra"})
        assert r.status_code == 409 and r.json()["detail"]["reason"] == "no_image_space", r.text


def test_search_request_mapping():
    req = search_request(SearchIn(query="q", pages={"first": 2, "last": 5}, kinds=["image"], rrf_k=3,
                                  prefetch_limit=50, weights={"clip": 2.0}), "q")
    assert (req.pages, req.kinds, req.rrf_k, req.prefetch_limit, req.weights) == ((2, 5), ["image"], 3, 50,
                                                                                   {"clip": 2.0})
