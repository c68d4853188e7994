"""Prometheus metrics, request ids, structured logs and health probes."""

from __future__ import annotations

import json
import logging

import pymupdf
from prometheus_client.parser import text_string_to_metric_families

from api.observability import JsonFormatter


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


def _samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_prometheus_metrics_per_route_stage_and_state(client):
    client.post("/corpora", json={"name": "docs"})
    r = client.post("/corpora/docs/documents", files=[("files", ("a.pdf", _pdf("metrics for lighthouses")))],
                    params={"wait": "true"})
    assert r.status_code == 201
    for _ in range(3):
        assert client.post("/corpora/docs/search", json={"query": "lighthouses"}).status_code == 200
    client.get("/corpora/nope")
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = _samples(r.text)
    search = frozenset({"method": "POST", "route": "/corpora/{corpus}/search", "status": "200"}.items())
    assert samples[("mmrag_http_requests_total", search)] == 3
    missing = frozenset({"method": "GET", "route": "/corpora/{corpus}", "status": "404"}.items())
    assert samples[("mmrag_http_requests_total", missing)] == 1
    latency = frozenset({"method": "POST", "route": "/corpora/{corpus}/search"}.items())
    assert samples[("mmrag_http_request_duration_seconds_count", latency)] == 3
    stages = {dict(labels)["stage"] for (name, labels) in samples if name == "mmrag_stage_seconds_count"
              and dict(labels)["pipeline"] == "search"}
    assert stages, "search timings are observed"
    ingest = {dict(labels)["stage"] for (name, labels) in samples if name == "mmrag_stage_seconds_count"
              and dict(labels)["pipeline"] == "ingest"}
    assert "parse" in ingest or "embed" in ingest, ingest
    assert samples[("mmrag_jobs", frozenset({"state": "done"}.items()))] == 1
    assert any(name == "mmrag_job_queue_depth" for name, _ in samples)
    old = client.get("/metrics", params={"format": "json"}).json()
    assert {"bm25", "text"} <= set(old["spaces"]) and "unavailable" in old


def test_request_id_is_taken_or_made(client):
    r = client.get("/health/live", headers={"X-Request-ID": "abc-123"})
    assert r.status_code == 200 and r.json() == {"status": "ok"} and r.headers["x-request-id"] == "abc-123"
    made = client.get("/health/live").headers["x-request-id"]
    bad = client.get("/health/live", headers={"X-Request-ID": "no spaces\nor newlines"}).headers["x-request-id"]
    assert len(made) == 32 and made != bad and "\n" not in bad


def test_ready_reflects_the_embedding_service(client):
    assert client.get("/health/ready").json() == {"status": "ok", "checks": {"store": "ok"}}
    client.app.state.pipeline.settings.embed.service_url = "http://127.0.0.1:9"  # nothing listens there
    r = client.get("/health/ready")
    assert r.status_code == 503 and r.json()["checks"]["store"] == "ok"
    assert r.json()["checks"]["embedding_service"] != "ok"


def test_json_logs_carry_the_request_id_and_never_the_key(client, caplog):
    key = client.app.state.auth.keys.create("admin").secret
    with caplog.at_level(logging.INFO, logger="mmrag.api.request"):
        client.get("/corpora", headers={"Authorization": f"Bearer {key}", "X-Request-ID": "req-7"})
    records = [r for r in caplog.records if r.name == "mmrag.api.request"]
    line = json.loads(JsonFormatter().format(records[-1]))
    assert line["request_id"] == "req-7" and line["route"] == "/corpora" and line["status"] == 200
    assert line["key_id"] == key.split("_")[1]
    assert key not in caplog.text and key[-20:] not in json.dumps(line)
