"""Doors that must not open by accident (issue 21): the strict ``auto`` open mode, the key check before
the body, per-route body limits, keys that end with their corpus, write keys that never create one,
bounded evaluations, query images refused before they are decoded, private files on disk."""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from api.app import create_app
from mmrag.embed.base import load_embedder
from mmrag.pipeline import build_pipeline
from tests.api.conftest import Server
from tests.api.test_auth import _suite
from tests.conftest import make_settings


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


@functools.cache
def _big_png(side: int = 7999) -> bytes:
    """A few hundred KB that decode to side x side RGB pixels (7999: ~190 MB decoded)."""
    buf = io.BytesIO()
    Image.new("L", (side, side), 255).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


# --- auto mode: open only to this machine's own clients --------------------------------------------------

@pytest.fixture(scope="module")
def open_server(tmp_path_factory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auto")
    srv = Server(tmp / "data", tmp / "server.log", env={"MMRAG_API__AUTH": "auto"})
    yield srv
    srv.stop()


def test_auto_answers_local_clients_without_a_key(open_server):
    assert httpx.get(f"{open_server.url}/corpora", timeout=30).status_code == 200
    same_origin = {"Origin": open_server.url, "Sec-Fetch-Site": "same-origin"}  # the server's own page
    r = httpx.post(f"{open_server.url}/corpora", json={"name": "local"}, headers=same_origin, timeout=120)
    assert r.status_code == 201, r.text
    r = httpx.post(f"{open_server.url}/corpora", json={"name": "curl"}, timeout=120)  # no Origin: not a browser
    assert r.status_code == 201, r.text


@pytest.mark.parametrize(("headers", "why"), [
    ({"X-Forwarded-For": "203.0.113.7"}, "proxy"),
    ({"Forwarded": "for=203.0.113.7;proto=https"}, "proxy"),
    ({"X-Forwarded-Host": "mmrag.example.org"}, "proxy"),
    ({"Host": "attacker.example:8000"}, "host"),  # DNS rebinding: a page of attacker.example resolved to 127.0.0.1
], ids=["x-forwarded-for", "forwarded", "x-forwarded-host", "foreign-host"])
def test_auto_refuses_proxied_and_foreign_host_requests(open_server, headers, why):
    r = httpx.get(f"{open_server.url}/corpora", headers=headers, timeout=30)
    assert r.status_code == 401 and why in r.json()["message"], r.text


@pytest.mark.parametrize("headers", [
    {"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
    {"Origin": "null"},  # a sandboxed frame, a data: page
    {"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"},  # another local web app
    {"Sec-Fetch-Site": "cross-site"},
], ids=["cross-site", "null-origin", "other-local-port", "fetch-metadata"])
def test_auto_refuses_a_cross_origin_form_post(open_server, headers):
    """A form on another site posting an upload (multipart: no preflight) to the open server."""
    httpx.post(f"{open_server.url}/corpora", json={"name": "victim"}, timeout=120)
    r = httpx.post(f"{open_server.url}/corpora/victim/documents", headers=headers, timeout=60,
                   files=[("files", ("x.pdf", _pdf("planted by a web page"), "application/pdf"))])
    message = r.json()["message"]
    assert r.status_code == 401 and ("origin" in message or "page" in message), r.text
    r = httpx.delete(f"{open_server.url}/corpora/victim", headers=headers, timeout=30)
    assert r.status_code == 401
    assert httpx.get(f"{open_server.url}/corpora/victim/documents", timeout=30).json() == []


# --- the key check comes before the body ----------------------------------------------------------

@pytest.fixture(scope="module")
def keyed(minilm, tmp_path_factory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("keyed")
    settings = make_settings(tmp / "data")
    settings.api.auth = "required"
    settings.api.max_evaluations_per_key = 1
    settings.eval_suites_dir = _suite(tmp / "eval", "lighthouse")
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as client:
        admin = {"Authorization": f"Bearer {client.app.state.auth.keys.create('admin').secret}"}
        assert client.post("/corpora", json={"name": "docs", "config": {"spaces": ["bm25", "text"]}},
                           headers=admin).status_code == 201
        yield {"client": client, "admin": admin, "settings": settings}
        service = client.app.state.evaluations
        deadline = time.time() + 120
        while any(j.state in ("queued", "running") for j in service.list()) and time.time() < deadline:
            time.sleep(0.2)
    pipeline.close()


def _asgi(app, method: str, path: str, headers: dict[str, str]) -> tuple[int, int]:
    """(status, how many times the app asked for the body) of one request straight into the ASGI app."""
    asked = 0
    status = 0

    async def receive():
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": b"x" * 65536, "more_body": True}

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
             "raw_path": path.encode(), "query_string": b"", "root_path": "", "scheme": "http",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
             "client": ("203.0.113.7", 50000), "server": ("127.0.0.1", 8000), "state": {}}
    asyncio.run(app(scope, receive, send))
    return status, asked


@pytest.mark.parametrize(("path", "content_type"), [
    ("/corpora/docs/documents", "multipart/form-data; boundary=xyz"),
    ("/corpora/docs/search", "application/json"),
    ("/corpora", "application/json"),
])
def test_an_unauthenticated_large_body_is_answered_401_unread(keyed, path, content_type):
    headers = {"host": "mmrag.example.org", "content-type": content_type, "content-length": str(30 << 20)}
    status, asked = _asgi(keyed["client"].app, "POST", path, headers)
    assert (status, asked) == (401, 0)
    status, asked = _asgi(keyed["client"].app, "POST", path, {**headers, "authorization": "Bearer mmrag_nope"})
    assert (status, asked) == (401, 0)


def test_another_tenants_corpus_is_404_before_its_body(keyed):
    keys = keyed["client"].app.state.auth.keys
    other = keys.create("write", "elsewhere").secret
    headers = {"host": "x", "content-type": "multipart/form-data; boundary=xyz", "content-length": str(30 << 20),
               "authorization": f"Bearer {other}"}
    assert _asgi(keyed["client"].app, "POST", "/corpora/docs/documents", headers) == (404, 0)


def test_the_server_answers_401_before_the_upload_is_sent(tmp_path):
    """Over a socket: headers announcing 30 MB and one KB of it; the 401 comes back without the rest."""
    srv = Server(tmp_path / "data", tmp_path / "server.log", env={"MMRAG_API__AUTH": "required"})
    try:
        host, port = "127.0.0.1", srv.port
        with socket.create_connection((host, port), timeout=60) as sock:
            sock.sendall(f"POST /corpora/docs/documents HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         "Content-Type: multipart/form-data; boundary=xyz\r\n"
                         f"Content-Length: {30 << 20}\r\n\r\n".encode() + b"--xyz\r\n" + b"x" * 1024)
            answer = sock.recv(4096)  # waits for the server; on a server that reads the body first: forever
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    finally:
        srv.stop()


def test_each_route_has_its_own_body_limit(keyed):
    client, admin = keyed["client"], keyed["admin"]
    big_json = {"name": "x" * (2 << 20)}
    r = client.post("/keys", json=big_json, headers=admin)
    assert r.status_code == 413 and "MMRAG_API__MAX_JSON_BYTES" in r.json()["message"]
    pdf = _pdf("a document")
    padded = pdf + b"\n%" + b"0" * (2 << 20)  # a 2 MB upload is fine: uploads have the large limit
    r = client.post("/corpora/docs/documents", files=[("files", ("big.pdf", padded))], headers=admin)
    assert r.status_code == 202, r.text
    schema = client.get("/openapi.json").json()
    assert "MMRAG_API__MAX_JSON_BYTES" in schema["paths"]["/keys"]["post"]["responses"]["413"]["description"]


# --- keys end with their corpus; write keys never create one ---------------------------------------

def test_a_recreated_corpus_refuses_its_predecessors_keys(keyed):
    client, admin = keyed["client"], keyed["admin"]
    assert client.post("/corpora", json={"name": "tenant-a"}, headers=admin).status_code == 201
    made = client.post("/keys", json={"scope": "write", "corpus": "tenant-a", "name": "alice"}, headers=admin).json()
    alice = {"Authorization": f"Bearer {made['key']}"}
    assert client.get("/corpora/tenant-a", headers=alice).status_code == 200
    assert client.delete("/corpora/tenant-a", headers=admin).status_code == 204
    assert client.post("/corpora", json={"name": "tenant-a"}, headers=admin).status_code == 201  # someone else's now
    assert client.get("/corpora/tenant-a", headers=alice).status_code == 401
    r = client.post("/corpora/tenant-a/documents", files=[("files", ("x.pdf", _pdf("x")))], headers=alice)
    assert r.status_code == 401
    listed = {k["id"]: k for k in client.get("/keys", headers=admin).json()}
    assert listed[made["id"]]["corpus"] == "tenant-a" and listed[made["id"]]["revoked_at"] is not None


def test_a_write_key_never_creates_a_corpus_even_by_evaluating(keyed):
    client = keyed["client"]
    writer = {"Authorization": f"Bearer {client.app.state.auth.keys.create('write', 'lighthouse').secret}"}
    r = client.post("/evaluations", json={"suite": "tiny"}, headers=writer)
    assert r.status_code == 403 and "never creates" in r.json()["message"], r.text
    assert client.get("/corpora/lighthouse", headers=keyed["admin"]).status_code == 404


def test_evaluations_per_key_are_bounded(keyed):
    client, admin = keyed["client"], keyed["admin"]
    first = client.post("/evaluations", json={"suite": "tiny"}, headers=admin)
    assert first.status_code == 202, first.text
    second = client.post("/evaluations", json={"suite": "tiny"}, headers=admin)
    assert second.status_code == 429 and "MMRAG_API__MAX_EVALUATIONS_PER_KEY" in second.json()["message"]


def test_a_key_request_without_a_corpus_is_a_schema_error(keyed):
    r = keyed["client"].post("/keys", json={"scope": "read"}, headers=keyed["admin"])
    assert r.status_code == 422 and "corpus" in r.json()["message"]
    schema = keyed["client"].get("/openapi.json").json()
    assert "discriminator" in str(schema["paths"]["/keys"]["post"]["requestBody"])


def test_a_huge_offset_is_a_422_not_a_500(keyed):
    r = keyed["client"].get("/corpora/docs/documents", params={"offset": "9" * 40}, headers=keyed["admin"])
    assert r.status_code == 422
    r = keyed["client"].get("/corpora/docs/documents", params={"offset": 2**63 - 1}, headers=keyed["admin"])
    assert r.status_code == 200 and r.json() == []


def test_document_ids_are_bounded(keyed):
    ids = [f"{i:032x}" for i in range(1001)]
    r = keyed["client"].post("/corpora/docs/search", json={"query": "x", "document_ids": ids}, headers=keyed["admin"])
    assert r.status_code == 422


# --- query images ------------------------------------------------------------------------------------

class Decodes:
    """Counts pixel decodes (PIL's Image.load) of images at least ``min_side`` wide while installed (other
    threads of the process, e.g. the job runner rendering a page, decode their own small images)."""

    def __init__(self, monkeypatch, min_side: int = 4000) -> None:
        self.count = 0
        original = Image.Image.load

        def load(img, *a, **k):
            if min(img.size) >= min_side:
                self.count += 1
            return original(img, *a, **k)

        monkeypatch.setattr(Image.Image, "load", load)


def test_an_image_query_to_a_text_only_corpus_is_409_before_decoding(keyed, monkeypatch):
    client, admin = keyed["client"], keyed["admin"]
    png = _big_png()
    decodes = Decodes(monkeypatch)
    r = client.post("/corpora/docs/search/image", files=[("image", ("q.png", png))], headers=admin)
    assert r.status_code == 409 and r.json()["detail"]["reason"] == "no_image_space", r.text
    r = client.post("/corpora/docs/search", json={"image_base64": base64.b64encode(png).decode()}, headers=admin)
    assert r.status_code == 409 and r.json()["detail"]["reason"] == "no_image_space", r.text
    assert decodes.count == 0


@pytest.fixture(scope="module")
def with_clip(minilm, tmp_path_factory) -> Iterator[TestClient]:
    settings = make_settings(tmp_path_factory.mktemp("clip") / "data")
    settings.embed.clip_model = "fake:8"
    pipeline = build_pipeline(settings, embedders={"text": minilm, "clip": load_embedder("fake:8")})
    with TestClient(create_app(settings, pipeline)) as client:
        assert client.post("/corpora", json={"name": "pics", "config": {"spaces": ["text", "clip"]}}).status_code == 201
        yield client
    pipeline.close()


def test_image_queries_are_decoded_under_a_small_pixel_cap(with_clip, monkeypatch):
    client, png = with_clip, _big_png()
    decodes = Decodes(monkeypatch)
    r = client.post("/corpora/pics/search/image", files=[("image", ("q.png", png))])
    assert r.status_code == 413 and "MMRAG_RETRIEVE__MAX_QUERY_IMAGE_PIXELS" in r.json()["message"], r.text
    assert decodes.count == 0  # refused from the header
    small = base64.b64encode(_big_png(64)).decode()
    r = client.post("/corpora/pics/search", json={"query": "x", "spaces": ["text"], "image_base64": small})
    assert r.status_code == 400 and r.json()["detail"]["reason"] == "no_image_space"  # the request uses none
    buf = io.BytesIO()
    Image.new("RGB", (6000, 4000), (10, 120, 200)).save(buf, format="JPEG", quality=50)
    seen: list[tuple[int, int]] = []
    original = Image.Image.load

    def load(img, *a, **k):
        seen.append(img.size)
        return original(img, *a, **k)

    monkeypatch.setattr(Image.Image, "load", load)
    r = client.post("/corpora/pics/search/image", files=[("image", ("q.jpg", buf.getvalue()))])
    assert r.status_code == 200, r.text
    cap = client.app.state.settings.retrieve.max_query_image_pixels
    assert seen and all(w * h <= cap for w, h in seen)  # the 24 MP JPEG decoded at half scale


# --- files on disk -------------------------------------------------------------------------------------

def test_the_data_folder_and_its_databases_are_private(keyed):
    data: Path = keyed["settings"].data_dir
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
    for name in ("keys.sqlite3", "catalog.sqlite3", "jobs.sqlite3"):
        assert stat.S_IMODE(os.stat(data / name).st_mode) == 0o600, name
    assert stat.S_IMODE(os.stat(data / "spool").st_mode) == 0o700
