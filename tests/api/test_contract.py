"""The OpenAPI document says what the server does: in-process checks of the schema and of the
refusals Starlette makes itself, then schemathesis (every check, stateful links) against a real
`mmrag serve` on 127.0.0.1 that requires keys."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pymupdf
import pytest

from mmrag.rest_client import Client
from tests.api.conftest import Server

CONFIG = Path(__file__).with_name("schemathesis.toml")
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")  # valid file bytes for uploads (no check is excused)
FUZZ_EXAMPLES = int(os.environ.get("MMRAG_FUZZ_EXAMPLES", "2"))  # per operation; a longer run: docs/benchmarks.md


def test_every_error_is_documented_with_our_body(client):
    schema = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in str(schema) and "ErrorBody" in schema["components"]["schemas"]
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            if op.get("security"):
                assert {"401", "403", "429"} <= codes, (method, path)
            if op.get("parameters") or op.get("requestBody"):
                assert "422" in codes, (method, path)
            for code, answer in op["responses"].items():
                if code.startswith("4"):
                    body = answer["content"]["application/json"]["schema"]
                    assert "ErrorBody" in str(body), (method, path, code)


def test_request_models_forbid_extra_fields(client):
    models = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("CorpusCreate", "SearchIn", "AnswerIn", "EvaluationIn", "AdminKeyCreate", "CorpusKeyCreate",
                 "PageRange"):
        for model in models[name].get("oneOf", [models[name]]):  # EvaluationIn: one object per suite
            assert model["additionalProperties"] is False, name
    r = client.post("/corpora", json={"name": "docs", "colour": "red"})
    assert r.status_code == 422 and "colour" in r.json()["message"]


def test_limits_in_the_schema_follow_the_settings(client):
    models = client.get("/openapi.json").json()["components"]["schemas"]
    retrieve = client.app.state.settings.retrieve
    assert models["SearchIn"]["properties"]["query"]["maxLength"] == retrieve.max_query_chars
    assert models["SearchIn"]["properties"]["top_k"]["maximum"] == retrieve.max_top_k


def test_starlette_refusals_use_our_body(client):
    r = client.post("/corpora", content=b'{"name": ', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "invalid_request"
    r = client.post("/corpora/x/documents", content=b"--broken", headers={"content-type": "multipart/form-data"})
    assert r.status_code in (400, 422) and set(r.json()) == {"error", "message", "detail"}
    r = client.request("OPTIONS", "/keys")
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST" and r.json()["error"] == "method_not_allowed"
    r = client.put("/corpora/x")
    assert r.headers["allow"] == "DELETE, GET" and "PUT" in r.json()["message"]
    r = client.get("/no/such/route")
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_request_body_limit(settings, minilm):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from mmrag.pipeline import build_pipeline

    settings.api.max_request_bytes = 4096
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as c:
        c.post("/corpora", json={"name": "docs"})
        r = c.post("/corpora/docs/documents", files=[("files", ("big.pdf", b"%PDF" + b"0" * 10_000))])
        assert r.status_code == 413 and "MMRAG_API__MAX_REQUEST_BYTES" in r.json()["message"]
        assert c.get("/corpora/docs").status_code == 200  # the server goes on
    pipeline.close()


def _admin_key(data_dir: Path) -> str:
    """`mmrag keys create --admin` on the data folder: its last line of output is the key alone."""
    env = {**os.environ, "MMRAG_DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "cli", "keys", "create", "--admin"], env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    key = out.stdout.strip().splitlines()[-1]
    assert key.startswith("mmrag_") and " " not in key
    return key


def _seed(url: str, key: str) -> str:
    """Corpora ``docs`` (a document: the seeded ids) and ``scratch`` (one the deletions may remove); the
    ``[dictionaries]`` of schemathesis.toml's path parameters, as TOML."""
    ids: dict[str, str] = {}
    with Client(url, api_key=key) as client:
        for corpus, text in (("docs", "Contract testing with generated requests"), ("scratch", "Deleted at will")):
            client.create_corpus(corpus)
            doc = pymupdf.open()
            doc.new_page().insert_text((72, 72), text)
            body = client.upload(corpus, [(f"{corpus}.pdf", doc.tobytes())], wait=True)
            ids[f"{corpus}_document"], ids[f"{corpus}_job"] = body["documents"][0]["id"], body["job"]["id"]
        hits = client.call("POST", "/corpora/docs/search", json={"query": "contract testing", "top_k": 1})
        page = hits["results"][0]["page_id"]
    values = {"corpus": "docs", "document": ids["docs_document"], "page": page, "job": ids["docs_job"],
              "scratch_corpus": "scratch", "scratch_document": ids["scratch_document"]}
    return "\n[dictionaries]\n" + "".join(f'{name} = {{ values = ["{v}"] }}\n' for name, v in values.items())


@pytest.mark.integration
def test_schemathesis_finds_nothing(tmp_path):
    data = tmp_path / "data"
    key = _admin_key(data)
    server = Server(data, tmp_path / "server.log", env={"MMRAG_API__AUTH": "required", "MMRAG_API__RATE_PER_KEY": "0"})
    try:
        config = tmp_path / "schemathesis.toml"
        config.write_text(CONFIG.read_text() + _seed(server.url, key))
        env = {**os.environ, "MMRAG_FUZZ_KEY": key, "SCHEMATHESIS_HOOKS": str(HOOKS)}
        run = subprocess.run(
            [str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(config), "run",
             f"{server.url}/openapi.json",
             "--checks", "all", "--max-examples", str(FUZZ_EXAMPLES), "--seed", "1", "--workers", "1",
             "--max-response-time", "120", "--no-color"],  # the time limit only catches hangs on a busy box
            env=env, capture_output=True, text=True, timeout=600)
        failures = run.stdout[run.stdout.find("=== FAILURES"):] if "=== FAILURES" in run.stdout else run.stdout
        assert run.returncode == 0, failures[:12000] + run.stderr[-2000:]
        generated = re.search(r"(\d+) generated", run.stdout)
        assert generated and int(generated.group(1)) > 200, run.stdout[-3000:]
        assert httpx.get(f"{server.url}/health/ready", timeout=10).status_code == 200
        listed = subprocess.run([sys.executable, "-m", "cli", "--api-key", key, "keys", "list"],
                                env={**os.environ, "MMRAG_DATA_DIR": str(data), "COLUMNS": "200"},
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0 and key.split("_")[1] in listed.stdout  # over REST, with the key
        assert "refused" not in listed.stderr and key not in listed.stdout
    finally:
        server.stop()



def test_bounds_the_schema_states_are_the_ones_the_server_keeps(client):
    """Found by the longer schemathesis run once its path ids reached a real corpus: a question over the
    schema's maxLength was answered, a filter key the schema allowed was refused."""
    client.post("/corpora", json={"name": "docs"})
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    limit = schema["AnswerIn"]["properties"]["question"]["maxLength"]
    for stream in (True, False):
        r = client.post("/corpora/docs/answer", json={"question": "x" * (limit + 1), "stream": stream})
        assert r.status_code == 400 and "MMRAG_RETRIEVE__MAX_QUERY_CHARS" in r.json()["message"], r.text
    keys = schema["SearchIn"]["properties"]["metadata"]["propertyNames"]
    assert re.fullmatch(keys["pattern"].strip("^$"), "doc.periods") and not re.search(keys["pattern"], "a\xa0b")
    r = client.post("/corpora/docs/search", json={"query": "q", "metadata": {"caf\u00e9": 1}})
    assert r.status_code == 422 and "metadata" in r.json()["message"], r.text
    assert client.post("/corpora/docs/search", json={"query": "q", "metadata": {"doc.periods": 1}}).status_code == 200
    r = client.post("/corpora/docs/search", json={"query": "q", "metadata": {"ratio": 0.5, "big": -1678811380015401.0}})
    assert r.status_code == 200, r.text  # a float filter value was a 500 (no engine matches floats for equality)
