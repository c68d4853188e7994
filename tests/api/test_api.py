"""REST behaviour in-process: every route, every bad input gets a clear 4xx, nothing else is affected."""

from __future__ import annotations

import io

import pymupdf
from PIL import Image

SCAN = "ocr_test.pdf"


def _pdf_bytes(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


def _upload(client, corpus, *files, metadata=None):
    data = {"metadata": metadata} if metadata else None
    return client.post(f"/corpora/{corpus}/documents", files=[("files", f) for f in files], data=data,
                       params={"wait": "true"})


def test_corpus_lifecycle(client):
    r = client.post("/corpora", json={"name": "docs"})
    assert r.status_code == 201 and r.json()["config"]["spaces"] == ["text", "bm25", "document"]
    assert client.post("/corpora", json={"name": "docs"}).status_code == 409
    bad = client.post("/corpora", json={"name": "Not OK!"})
    assert bad.status_code == 422 and "name" in bad.json()["message"]
    assert [c["name"] for c in client.get("/corpora").json()] == ["docs"]
    assert client.get("/corpora/docs").json()["documents"] == 0
    assert client.delete("/corpora/docs").status_code == 204
    r = client.get("/corpora/docs")
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_upload_search_get_delete(client, corpus_dir):
    client.post("/corpora", json={"name": "docs"})
    pdf = (corpus_dir / "pdf" / "amt_handbook_sample.pdf").read_bytes()
    mine = _pdf_bytes("The zebra crossing protocol uses seventeen striped flags.")
    r = _upload(client, "docs", ("amt.pdf", pdf, "application/pdf"), ("mine.pdf", mine, "application/pdf"),
                metadata='{"team": "blue"}')
    assert r.status_code == 201, r.text
    docs = r.json()["documents"]
    assert [d["status"] for d in docs] == ["created", "created"] and docs[0]["metadata"]["team"] == "blue"
    assert docs[0]["metadata"]["doc"]["source_kind"] == "pdf"  # facts read from the file sit beside user metadata
    again = _upload(client, "docs", ("amt-copy.pdf", pdf, "application/pdf"))
    assert again.status_code == 200 and again.json()["documents"][0]["status"] == "exists"

    r = client.post("/corpora/docs/search", json={"query": "striped flags zebra", "top_k": 2, "explain": True})
    assert r.status_code == 200
    top = r.json()["results"][0]
    assert top["document"] == "mine.pdf" and top["page"] == 1 and "zebra" in top["snippet"]
    assert top["ranks"]["bm25"] == 1 and len(top["boxes"]) == len(top["snippet"].split())
    img = client.get(top["image_url"])
    assert img.status_code == 200 and img.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(img.content)).format == "PNG"
    thumb = client.get(top["thumbnail_url"])
    assert thumb.headers["content-type"] == "image/jpeg" and Image.open(io.BytesIO(thumb.content)).width == 256

    filt = client.post("/corpora/docs/search", json={"query": "striped flags zebra", "document_ids": [docs[0]["id"]]})
    assert {x["document"] for x in filt.json()["results"]} == {"amt.pdf"}
    meta = client.post("/corpora/docs/search", json={"query": "flags", "metadata": {"team": "red"}})
    assert meta.status_code == 200 and meta.json()["results"] == []

    detail = client.get(f"/corpora/docs/documents/{docs[1]['id']}").json()
    assert detail["page_count"] == 1 and detail["pages"][0]["text_source"] == "layer"
    assert client.delete(f"/corpora/docs/documents/{docs[1]['id']}").status_code == 204
    after = client.post("/corpora/docs/search", json={"query": "striped flags zebra"}).json()["results"]
    assert all(x["document"] != "mine.pdf" for x in after)
    assert client.get(f"/corpora/docs/documents/{docs[1]['id']}").status_code == 404
    assert [d["filename"] for d in client.get("/corpora/docs/documents").json()] == ["amt.pdf"]


def test_bad_uploads_get_clear_errors_and_break_nothing(client, settings):
    client.post("/corpora", json={"name": "docs"})
    good = _pdf_bytes("kept safe")
    assert _upload(client, "docs", ("good.pdf", good, "application/pdf")).status_code == 201
    encrypted = pymupdf.open()
    encrypted.new_page()
    locked = encrypted.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="x", owner_pw="x")
    bomb = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(bomb, format="PNG")
    cases = [
        (("empty.pdf", b"", "application/pdf"), 400, "empty"),
        (("corrupt.pdf", b"%PDF-1.4\n" + b"\x01" * 500, "application/pdf"), 422, "PDF"),
        (("cut.pdf", good[: len(good) // 2], "application/pdf"), 422, "PDF"),
        (("locked.pdf", locked, "application/pdf"), 422, "encrypted"),
        (("fake.png", b"this is text, not a png" * 20, "image/png"), 415, "allowed"),
        (("bomb.png", bomb.getvalue(), "image/png"), 413, "pixels"),
    ]
    for file, status, words in cases:
        r = _upload(client, "docs", file)
        assert r.status_code == status, (file[0], r.text)
        err = r.json()["errors"][0]
        assert err["filename"] == file[0] and words in err["message"], err
    mixed = _upload(client, "docs", ("ok2.pdf", _pdf_bytes("second good file"), "application/pdf"),
                    ("fake.png", b"nope" * 50, "image/png"))
    assert mixed.status_code == 201
    assert len(mixed.json()["documents"]) == 1 and mixed.json()["errors"][0]["error"] == "unsupported_media_type"
    settings.ingest.max_upload_bytes = 2048
    big = _upload(client, "docs", ("big.pdf", b"%PDF-1.4" + b"0" * 5000, "application/pdf"))
    assert big.status_code == 413 and "limit" in big.json()["errors"][0]["message"]
    names = sorted(d["filename"] for d in client.get("/corpora/docs/documents").json())
    assert names == ["good.pdf", "ok2.pdf"]
    assert client.get("/health").json()["status"] == "ok"


def test_unknown_ids_and_bad_queries(client):
    client.post("/corpora", json={"name": "docs"})
    r = _upload(client, "nope", ("a.pdf", _pdf_bytes("x"), "application/pdf"))
    assert r.status_code == 404 and "unknown corpus" in r.json()["message"]
    assert client.get("/corpora/docs/documents/deadbeef").status_code == 404
    assert client.delete("/corpora/docs/documents/deadbeef").status_code == 404
    assert client.get("/corpora/docs/pages/deadbeef/image").status_code == 404
    assert client.post("/corpora/nope/search", json={"query": "x"}).status_code == 404
    for body, status, words in [
        ({"query": ""}, 400, "empty query"),
        ({"query": "x", "top_k": 0}, 422, "top_k"),
        ({"query": "x", "top_k": 500}, 400, "top_k"),
        ({"query": "x", "spaces": ["colpali"]}, 409, "not available"),  # a space this corpus lacks
        ({"query": "x", "spaces": ["nonsense"]}, 422, "spaces"),
        ({"query": "", "image_base64": "!!!notbase64"}, 400, "base64"),
        ({"query": "", "image_base64": "aGVsbG8="}, 409, "image queries need clip or colpali"),  # not decoded
    ]:
        r = client.post("/corpora/docs/search", json=body)
        assert r.status_code == status and words in r.json()["message"], (body, r.text)


def test_openapi_documents_errors(client):
    spec = client.get("/openapi.json").json()
    upload = spec["paths"]["/corpora/{corpus}/documents"]["post"]["responses"]
    assert {"201", "404", "413", "415", "422"} <= set(upload)
    assert "ErrorBody" in spec["components"]["schemas"]
    search = spec["paths"]["/corpora/{corpus}/search"]["post"]
    props = spec["components"]["schemas"]["SearchIn"]["properties"]
    assert props["top_k"]["minimum"] == 1 and "404" in search["responses"]
