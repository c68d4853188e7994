"""API keys and tenants, in-process with keys required: route by route, generated from the route table."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pymupdf
import pytest
from fastapi.testclient import TestClient
from httpx import Response

from api.app import create_app
from api.auth import ANY_KEY, PUBLIC, route_scopes
from mmrag.keys import KeyStore
from mmrag.pipeline import build_pipeline
from tests.conftest import make_settings

# What each route needs. A new route must be added here (the first test fails until it is).
ROUTES: dict[tuple[str, str], str] = {
    ("GET", "/"): PUBLIC, ("HEAD", "/"): PUBLIC, ("GET", "/static/{name}"): PUBLIC,
    ("HEAD", "/static/{name}"): PUBLIC, ("GET", "/health"): PUBLIC,
    ("GET", "/health/live"): PUBLIC, ("GET", "/health/ready"): PUBLIC, ("GET", "/metrics"): PUBLIC,
    ("GET", "/openapi.json"): PUBLIC, ("HEAD", "/openapi.json"): PUBLIC, ("GET", "/docs"): PUBLIC,
    ("HEAD", "/docs"): PUBLIC, ("GET", "/docs/oauth2-redirect"): PUBLIC, ("HEAD", "/docs/oauth2-redirect"): PUBLIC,
    ("GET", "/redoc"): PUBLIC, ("HEAD", "/redoc"): PUBLIC,
    ("POST", "/keys"): "admin", ("GET", "/keys"): "admin", ("DELETE", "/keys/{key_id}"): "admin",
    ("POST", "/corpora"): "admin", ("DELETE", "/corpora/{corpus}"): "admin",
    ("GET", "/corpora"): ANY_KEY, ("GET", "/corpora/{corpus}"): "read",
    ("POST", "/corpora/{corpus}/documents"): "write", ("GET", "/corpora/{corpus}/documents"): "read",
    ("GET", "/corpora/{corpus}/documents/{document_id}"): "read",
    ("DELETE", "/corpora/{corpus}/documents/{document_id}"): "write",
    ("GET", "/corpora/{corpus}/pages/{page_id}/image"): "read", ("GET", "/corpora/{corpus}/pages/{page_id}"): "read",
    ("POST", "/corpora/{corpus}/search"): "read", ("POST", "/corpora/{corpus}/search/image"): "read",
    ("POST", "/corpora/{corpus}/answer"): "read", ("GET", "/corpora/{corpus}/jobs"): "read",
    ("POST", "/corpora/{corpus}/ranker"): "write", ("GET", "/corpora/{corpus}/ranker"): "read",
    ("DELETE", "/corpora/{corpus}/ranker"): "write",
    ("GET", "/jobs/{job_id}"): ANY_KEY, ("POST", "/jobs/{job_id}/cancel"): ANY_KEY,
    ("GET", "/jobs/{job_id}/events"): ANY_KEY,
    ("GET", "/evaluations/suites"): ANY_KEY, ("POST", "/evaluations"): ANY_KEY, ("GET", "/evaluations"): ANY_KEY,
    ("GET", "/evaluations/{job_id}"): ANY_KEY, ("GET", "/evaluations/{job_id}/report"): ANY_KEY,
    ("GET", "/evaluations/{job_id}/files/{name}"): ANY_KEY, ("POST", "/evaluations/{job_id}/compare"): ANY_KEY,
    ("POST", "/v1/chat/completions"): ANY_KEY, ("GET", "/v1/models"): ANY_KEY,  # the model (corpus) is in the body
    ("GET", "/mcp"): ANY_KEY, ("HEAD", "/mcp"): ANY_KEY, ("POST", "/mcp"): ANY_KEY,  # each tool checks the corpus
    ("DELETE", "/mcp"): ANY_KEY,
}
MCP = "/mcp"  # JSON-RPC, not REST: its tenancy is tested with the MCP client (tests/api/test_mcp.py)
# Routes whose object (a job or an evaluation) belongs to a corpus, and the scope it needs there.
OBJECT_SCOPE = {("POST", "/jobs/{job_id}/cancel"): "write", ("POST", "/evaluations"): "write"}
LISTINGS = {("GET", "/corpora"), ("GET", "/evaluations"), ("GET", "/evaluations/suites"), ("GET", "/v1/models")}
ANT_LISTINGS = {"/corpora": ["ant"], "/evaluations": [], "/evaluations/suites": ["tiny"],  # what ant's key lists
                "/v1/models": ["ant"]}


def _names(body: list[dict] | dict) -> list[str]:
    if isinstance(body, dict):  # OpenAI's list of models
        return [item["id"] for item in body["data"]]
    return [item["name"] for item in body]


def _error(r: Response) -> str:
    """The error code of our body, or of OpenAI's on the /v1 routes."""
    error = r.json()["error"]
    return {"model_not_found": "not_found", "invalid_api_key": "unauthorized"}.get(error["code"], error["code"]) \
        if isinstance(error, dict) else error


def _events(r: Response) -> list[str]:
    return re.findall(r"^event: (\w+)$", r.text, re.MULTILINE)


def _id_state(r: Response) -> tuple[str, str]:
    return r.json()["id"], r.json()["state"]


# What bee's read key gets on each route it may use: the status and a fact of the body (a new read route
# must be added here). The corpus has no image space, so an image search is refused after the key passed.
READ_ANSWERS: dict[tuple[str, str], tuple[int, Callable[[Response, dict[str, str]], bool]]] = {
    ("GET", "/corpora"): (200, lambda r, ids: _names(r.json()) == ["bee"]),
    ("GET", "/corpora/{corpus}"): (200, lambda r, ids: r.json()["name"] == "bee" and r.json()["documents"] >= 1),
    ("GET", "/corpora/{corpus}/documents"): (200, lambda r, ids: ids["bee-doc"] in [d["id"] for d in r.json()]),
    ("GET", "/corpora/{corpus}/documents/{document_id}"):
        (200, lambda r, ids: r.json()["filename"] == "bee.pdf" and r.json()["pages"][0]["id"] == ids["bee-page"]),
    ("GET", "/corpora/{corpus}/pages/{page_id}/image"):
        (200, lambda r, ids: r.headers["content-type"] == "image/png" and r.content.startswith(b"\x89PNG")),
    ("GET", "/corpora/{corpus}/pages/{page_id}"):
        (200, lambda r, ids: r.json()["id"] == ids["bee-page"] and r.json()["text"] == "bee"
         and r.json()["words"][0]["text"] == "bee"),
    ("POST", "/v1/chat/completions"):
        (200, lambda r, ids: r.json()["mode"] == "extractive"
         and ids["bee-doc"] in [c["document_id"] for c in r.json()["citations"]]),
    ("GET", "/v1/models"): (200, lambda r, ids: _names(r.json()) == ["bee"]),
    ("POST", "/corpora/{corpus}/search"): (200, lambda r, ids: r.json()["results"][0]["document_id"] == ids["bee-doc"]),
    ("POST", "/corpora/{corpus}/search/image"):
        (409, lambda r, ids: r.json()["detail"] == {"reason": "no_image_space"}),
    ("POST", "/corpora/{corpus}/answer"):
        (200, lambda r, ids: r.json()["mode"] == "extractive"
         and ids["bee-doc"] in [c["document_id"] for c in r.json()["citations"]]),
    ("GET", "/corpora/{corpus}/jobs"): (200, lambda r, ids: ids["bee-job"] in [j["id"] for j in r.json()]),
    ("GET", "/corpora/{corpus}/ranker"): (200, lambda r, ids: r.json()["active"] == "shipped"
                                          and r.json()["report"] is None),
    ("GET", "/jobs/{job_id}"): (200, lambda r, ids: _id_state(r) == (ids["bee-job"], "done")),
    ("GET", "/jobs/{job_id}/events"):
        (200, lambda r, ids: _events(r) == ["progress", "end"] and ids["bee-job"] in r.text),
    ("GET", "/evaluations/suites"): (200, lambda r, ids: r.json() == ["tiny"]),
    ("GET", "/evaluations"): (200, lambda r, ids: [e["id"] for e in r.json()] == [ids["bee-eval"], ids["bee-eval2"]]),
    ("GET", "/evaluations/{job_id}"): (200, lambda r, ids: _id_state(r) == (ids["bee-eval"], "done")),
    ("GET", "/evaluations/{job_id}/report"): (200, lambda r, ids: r.json()["suite"]["name"] == "tiny"),
    ("GET", "/evaluations/{job_id}/files/{name}"): (200, lambda r, ids: r.text.startswith("# Evaluation: tiny")),
    ("POST", "/evaluations/{job_id}/compare"):
        (200, lambda r, ids: (r.json()["a"]["id"], r.json()["b"]["id"]) == (ids["bee-eval"], ids["bee-eval2"])),
}


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


def _suite(root: Path, corpus: str) -> Path:
    """A one-document suite that evaluates into ``corpus``."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "a.pdf").write_bytes(_pdf("Suite document about lighthouses"))
    suite = root / "suites" / "tiny"
    suite.mkdir(parents=True)
    (suite / "queries.jsonl").write_text('{"_id": "q1", "text": "lighthouses"}\n')
    (suite / "qrels.tsv").write_text("q1\ta.pdf#1\t2\n")
    (suite / "suite.yaml").write_text(
        f"name: tiny\ndataset: {{format: pdf-qrels, corpus: {docs}, include: ['*.pdf']}}\n"
        f"pipeline: {{corpus_name: {corpus}, spaces: [bm25]}}\n"
        "metrics: {retrieval: [ndcg], k: [1], primary: ndcg@1, answers: false}\n")
    return root / "suites"


@pytest.fixture(scope="module")
def world(minilm, tmp_path_factory) -> Iterator[dict]:
    """Keys required; corpora ``ant`` and ``bee`` with a document each, a job, an evaluation of bee.
    Shared by the tests of this module: none of them changes what the others look at."""
    tmp_path = tmp_path_factory.mktemp("auth")
    settings = make_settings(tmp_path / "data")
    settings.api.auth = "required"
    settings.eval_suites_dir = _suite(tmp_path / "eval", "bee")
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as client:
        keys: KeyStore = client.app.state.auth.keys
        secrets = {"admin": keys.create("admin").secret}
        for corpus in ("ant", "bee"):
            for scope in ("read", "write"):
                secrets[f"{corpus}-{scope}"] = keys.create(scope, corpus).secret  # type: ignore[arg-type]
        admin = {"Authorization": f"Bearer {secrets['admin']}"}
        ids: dict[str, str] = {}
        for corpus in ("ant", "bee"):
            assert client.post("/corpora", json={"name": corpus}, headers=admin).status_code == 201
            r = client.post(f"/corpora/{corpus}/documents", files=[("files", (f"{corpus}.pdf", _pdf(corpus)))],
                            params={"wait": "true"}, headers=admin)
            assert r.status_code == 201, r.text
            ids[f"{corpus}-job"] = r.json()["job"]["id"]
            ids[f"{corpus}-doc"] = r.json()["documents"][0]["id"]
        detail = client.get(f"/corpora/bee/documents/{ids['bee-doc']}", headers=admin).json()
        ids["bee-page"] = detail["pages"][0]["id"]
        for run in ("bee-eval", "bee-eval2"):  # two runs: the second is compared with the first
            r = client.post("/evaluations", json={"suite": "tiny"}, headers=admin)
            assert r.status_code == 202 and r.json()["corpus"] == "bee", r.text
            ids[run] = r.json()["id"]
        service = client.app.state.evaluations
        deadline = time.time() + 120
        while any(service.get(ids[run]).state in ("queued", "running") for run in ("bee-eval", "bee-eval2")):
            assert time.time() < deadline, "the evaluations did not finish"
            time.sleep(0.2)  # the report routes answer 200 only for finished runs
        assert [service.get(ids[run]).state for run in ("bee-eval", "bee-eval2")] == ["done", "done"]
        yield {"client": client, "secrets": secrets, "ids": ids, "keys": keys, "settings": settings}
    pipeline.close()


def _request(world: dict, method: str, path: str, key: str | None):
    """Call the route with every path parameter naming one of bee's objects."""
    ids = world["ids"]
    values = {"corpus": "bee", "document_id": ids["bee-doc"], "page_id": ids["bee-page"], "name": "report.md",
              "key_id": "0" * 12, "job_id": ids["bee-eval"] if path.startswith("/evaluations") else ids["bee-job"]}
    if path.endswith("/compare"):
        values["job_id"] = ids["bee-eval2"]  # B; the body names A
    url = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
    headers = {"Authorization": f"Bearer {world['secrets'][key]}"} if key else {}
    kwargs: dict = {}
    if path == "/v1/chat/completions":
        kwargs["json"] = {"model": "bee", "messages": [{"role": "user", "content": "bee?"}]}
    elif path.endswith("/search") or path.endswith("/answer"):
        kwargs["json"] = {"question": "bee?", "stream": False} if path.endswith("/answer") else {"query": "bee"}
    elif path.endswith("/ranker") and method == "POST":
        kwargs["json"] = {"questions": [{"id": n, "query": "bee", "judgments": {"bee.pdf#1": 1}, "group": n}
                                        for n in ("a", "b")]}
    elif path == "/evaluations" and method == "POST":
        kwargs["json"] = {"suite": "tiny"}
    elif path.endswith("/compare"):
        kwargs["json"] = {"baseline": ids["bee-eval"]}
    elif path.endswith("/documents") and method == "POST":
        kwargs["files"] = [("files", ("x.pdf", _pdf("intruder")))]
    elif path.endswith("/search/image"):
        kwargs["files"] = [("image", ("q.png", b"not an image"))]
    return world["client"].request(method, url, headers=headers, **kwargs)


def test_every_route_is_in_the_table(world):
    assert route_scopes(world["client"].app) == ROUTES


def test_no_key_is_401_on_every_protected_route(world):
    for (method, path), scope in route_scopes(world["client"].app).items():
        if scope == PUBLIC:
            continue
        r = _request(world, method, path, None)
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers["www-authenticate"] == "Bearer", (method, path)
        assert method == "HEAD" or _error(r) == "unauthorized", (method, path, r.text)  # HEAD: no body


def test_another_tenant_sees_nothing(world):
    """A write key of ant on each of bee's routes: 404 (or 403 for admin routes); listings omit bee."""
    for (method, path), scope in route_scopes(world["client"].app).items():
        if scope == PUBLIC or path == MCP:
            continue
        r = _request(world, method, path, "ant-write")
        if scope == "admin" and "{corpus}" not in path:
            assert (r.status_code, r.json()["error"]) == (403, "forbidden"), (method, path, r.text)
        elif (method, path) in LISTINGS:
            listed = _names(r.json()) if path in ("/corpora", "/v1/models") else r.json()
            assert (r.status_code, listed) == (200, ANT_LISTINGS[path]), (method, path, r.text)
        else:
            assert r.status_code == 404 and _error(r) == "not_found", (method, path, r.text)
    client, admin = world["client"], {"Authorization": f"Bearer {world['secrets']['admin']}"}
    names = [d["filename"] for d in client.get("/corpora/bee/documents", headers=admin).json()]
    assert "bee.pdf" in names and "x.pdf" not in names  # nothing of bee was touched, nothing added
    assert [c["name"] for c in client.get("/corpora", headers=admin).json()] == ["ant", "bee"]


def test_scopes_within_a_tenant(world):
    """bee's read key: each read route answers what it should (READ_ANSWERS), write and admin routes are 403."""
    read_routes = set()
    for (method, path), scope in route_scopes(world["client"].app).items():
        if scope == PUBLIC or path == MCP:
            continue
        needed = OBJECT_SCOPE.get((method, path), "read" if scope == ANY_KEY else scope)
        r = _request(world, method, path, "bee-read")
        if needed in ("write", "admin"):
            assert r.status_code == 403 and r.json()["error"] == "forbidden", (method, path, r.text)
        else:
            read_routes.add((method, path))
            status, holds = READ_ANSWERS[(method, path)]
            assert r.status_code == status and holds(r, world["ids"]), (method, path, r.text[:2000])
    assert read_routes == set(READ_ANSWERS)
    write = {"Authorization": f"Bearer {world['secrets']['bee-write']}"}
    client = world["client"]
    r = client.post("/corpora/bee/documents", files=[("files", ("own.pdf", _pdf("own")))], params={"wait": "true"},
                    headers=write)
    assert r.status_code == 201, r.text
    doc = r.json()["documents"][0]["id"]
    assert client.delete(f"/corpora/bee/documents/{doc}", headers=write).status_code == 204


def test_listings_show_only_the_keys_corpus(world):
    client, secrets = world["client"], world["secrets"]
    ant = {"Authorization": f"Bearer {secrets['ant-read']}"}
    assert [c["name"] for c in client.get("/corpora", headers=ant).json()] == ["ant"]
    assert client.get("/evaluations", headers=ant).json() == []
    bee = {"Authorization": f"Bearer {secrets['bee-read']}"}
    assert [e["corpus"] for e in client.get("/evaluations", headers=bee).json()] == ["bee", "bee"]


def test_keys_over_rest_and_revocation(world):
    client, secrets = world["client"], world["secrets"]
    admin = {"Authorization": f"Bearer {secrets['admin']}"}
    r = client.post("/keys", json={"scope": "read", "corpus": "ant", "name": "ci"}, headers=admin)
    assert r.status_code == 201 and r.json()["key"].startswith(r.json()["prefix"])
    new = {"Authorization": f"Bearer {r.json()['key']}"}
    assert client.get("/corpora/ant", headers=new).status_code == 200
    listed = client.get("/keys", headers=admin).json()
    assert r.json()["id"] in [k["id"] for k in listed] and all("key" not in k for k in listed)
    assert client.delete(f"/keys/{r.json()['id']}", headers=admin).json()["revoked_at"] is not None
    assert client.get("/corpora/ant", headers=new).status_code == 401
    bad = client.post("/keys", json={"scope": "read"}, headers=admin)  # the schema says a read key has a corpus
    assert bad.status_code == 422 and "corpus" in bad.json()["message"]
    extra = client.post("/keys", json={"scope": "admin", "color": "red"}, headers=admin)
    assert extra.status_code == 422 and "color" in extra.json()["message"]
    wrong = {"Authorization": secrets["admin"]}  # no "Bearer"
    assert client.get("/keys", headers=wrong).status_code == 401


def test_keys_are_stored_hashed(world):
    settings = world["settings"]
    db = (settings.data_dir / "keys.sqlite3").read_bytes() + (settings.data_dir / "keys.sqlite3-wal").read_bytes()
    for secret in world["secrets"].values():
        assert secret.encode() not in db and secret.split("_")[1].encode() in db


def test_rate_limit_per_key(settings, minilm):
    settings.api.auth = "required"
    settings.api.rate_per_key = 1.0
    settings.api.rate_burst = 3
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as client:
        keys = client.app.state.auth.keys
        one, two = ({"Authorization": f"Bearer {keys.create('admin').secret}"} for _ in range(2))
        codes = [client.get("/corpora", headers=one).status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and 429 in codes[3:]
        r = client.get("/corpora", headers=one)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1 and r.json()["error"] == "overloaded"
        assert client.get("/corpora", headers=two).status_code == 200  # another key is not affected
    pipeline.close()


def test_open_on_loopback_and_required_elsewhere(settings, minilm):
    from api.auth import AuthGate

    for host, mode, is_open in [("127.0.0.1", "auto", True), ("::1", "auto", True), ("0.0.0.0", "auto", False),
                                ("10.1.2.3", "auto", False), ("127.0.0.1", "required", False),
                                ("0.0.0.0", "off", True)]:
        settings.api.host, settings.api.auth = host, mode
        gate = AuthGate(settings)
        assert gate.open is is_open, (host, mode)
        gate.close()
