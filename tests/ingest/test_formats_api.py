"""Every kind through the one ingestion path (REST -> job -> plan/convert -> parse -> embed -> write)."""

from __future__ import annotations

import http.server
import io
import threading

import pytest
from fastapi.testclient import TestClient
from msoffcrypto.format.ooxml import OOXMLFile

from api.app import create_app
from mmrag.pipeline import build_pipeline
from tests.ingest.office_fixtures import email_with_attachments, xml_bomb_docx, zip_bomb_docx
from tests.ingest.test_formats import formats_file


@pytest.fixture()
def client(settings, minilm):
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as c:
        yield c
    pipeline.close()


@pytest.fixture()
def recording_server():
    """An HTTP server on 127.0.0.1 that records every request it gets (nothing should reach it)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()


def _upload(client, files, metadata=None):
    return client.post("/corpora/docs/documents", files=[("files", f) for f in files],
                       data={"metadata": metadata} if metadata else None, params={"wait": "true"})


def test_documents_of_every_family_and_bad_ones_in_one_job(client, recording_server):
    base, hits = recording_server
    html = (f'<html><head><title>Remote page</title><script src="{base}/x.js"></script>'
            f'<link rel="stylesheet" href="{base}/s.css"></head><body><img src="{base}/img.png">'
            f'<p>The heron migration census counted 412 birds.</p><iframe src="{base}/frame"></iframe></body></html>')
    locked = io.BytesIO()
    OOXMLFile(io.BytesIO(formats_file("docx/lorem_ipsum.docx"))).encrypt("pw", locked)
    assert client.post("/corpora", json={"name": "docs"}).status_code == 201
    r = _upload(client, [
        ("word_sample.docx", formats_file("docx/word_sample.docx"), "application/octet-stream"),
        ("mail.eml", email_with_attachments(2, "The quarterly shipment report is attached."), "message/rfc822"),
        ("remote.html", html.encode(), "text/html"),
        ("random.docx", bytes(range(256)) * 40, "application/octet-stream"),
        ("bomb.docx", zip_bomb_docx(), "application/octet-stream"),
        ("lol.docx", xml_bomb_docx(formats_file("docx/word_sample.docx")), "application/octet-stream"),
        ("locked.docx", locked.getvalue(), "application/octet-stream"),
    ], metadata='{"team": "blue"}')
    assert r.status_code == 201, r.text
    body = r.json()
    docs = {d["filename"]: d for d in body["documents"]}
    assert set(docs) == {"word_sample.docx", "mail.eml", "mail.eml/note0.txt", "mail.eml/note1.txt", "remote.html"}
    assert docs["word_sample.docx"]["metadata"]["team"] == "blue"
    assert docs["word_sample.docx"]["metadata"]["doc"]["author"] == "Christoph Auer"
    assert docs["mail.eml/note1.txt"]["metadata"]["attachment_of"] == "mail.eml"
    assert docs["remote.html"]["metadata"]["doc"]["title"] == "Remote page"
    errors = {e["filename"]: e for e in body["errors"]}
    assert errors["random.docx"]["error"] == "unsupported_media_type"
    assert errors["bomb.docx"]["error"] == "too_large" and "MAX_ZIP_RATIO" in errors["bomb.docx"]["message"]
    assert errors["lol.docx"]["error"] == "corrupt_document" and "entit" in errors["lol.docx"]["message"]
    assert errors["locked.docx"]["error"] == "corrupt_document" and "password" in errors["locked.docx"]["message"]
    assert hits == [], "a remote reference was fetched"

    for query, expected in [("heron migration census", "remote.html"), ("shipment code ZX0001", "mail.eml/note1.txt"),
                            ("Summer activities", "word_sample.docx")]:
        res = client.post("/corpora/docs/search", json={"query": query, "top_k": 3}).json()["results"]
        assert res[0]["document"] == expected, (query, [h["document"] for h in res])
    only_docx = client.post("/corpora/docs/search", json={"query": "heron migration census", "top_k": 5,
                                                        "metadata": {"doc.source_kind": "docx", "team": "blue"}})
    found = only_docx.json()["results"]
    assert found and {h["document"] for h in found} == {"word_sample.docx"}
    assert found[0]["metadata"]["doc"]["author"] == "Christoph Auer"
    top = client.post("/corpora/docs/search", json={"query": "heron", "top_k": 1}).json()["results"][0]
    img = client.get(top["image_url"])
    assert img.status_code == 200 and img.content[:4] in (b"\x89PNG", b"RIFF")

    single = _upload(client, [("bomb2.docx", zip_bomb_docx(8 << 20), "application/octet-stream")])
    assert single.status_code == 413 and "limit" in single.json()["errors"][0]["message"]
    assert client.get("/corpora").status_code == 200
    assert len(client.get("/corpora/docs/documents").json()) == 5
