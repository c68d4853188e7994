"""/health and the metrics routes: which spaces can really serve, and a one-line reason for each that is off."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.cpu_kernels import choose_text_kernels, this_cpu
from tests.conftest import make_settings


def test_health_claims_only_the_spaces_that_can_serve(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:8"
    settings.embed.clip_model = f"open_clip:ViT-B-32/{tmp_path / 'missing.safetensors'}"  # cannot load here
    with TestClient(create_app(settings)) as client:
        health = client.get("/health").json()
        assert health["serving"] == ["text", "bm25", "document"]  # clip: no corpus uses it, not tried yet
        assert health["pending"] == ["clip"] and health["off"]["colpali"] == "disabled in configuration"
        assert set(health["off"]) == {"colpali", "vlm"}  # the VLM is off here too (vlm.backend = none)
        created = client.post("/corpora", json={"name": "c"}).json()  # asks for clip: it cannot load
        assert "clip" not in created["config"]["spaces"]
        health = client.get("/health").json()
        assert health["serving"] == ["text", "bm25", "document"] and health["pending"] == []
        assert "missing.safetensors" in health["off"]["clip"] and "\n" not in health["off"]["clip"]
        off = health["off"]["clip"]
        assert len(off) <= 160 and health["unavailable"]["clip"].startswith(off[:40])  # the full reason beside it
    with TestClient(create_app(settings)) as client:  # a restart: no corpus uses clip, so it is not claimed
        health = client.get("/health").json()
        assert "clip" not in health["serving"] and health["pending"] == ["clip"]


def test_health_says_which_kernels_the_text_model_runs_on_this_cpu(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    settings.embed.text_model, settings.embed.device = "fake:8", "cpu"
    with TestClient(create_app(settings)) as client:
        kernels = client.get("/health").json()["text_kernels"]
    expected = choose_text_kernels(settings.embed.text_precision, this_cpu())
    assert kernels == {"where": "in-process", **expected.as_dict()}
    assert kernels["cpu"] == this_cpu().kind and kernels["reason"]
    if this_cpu().x86 and "avx2" in this_cpu().flags:  # every x86 CPU with AVX2 gets int8, exact kernels
        assert (kernels["precision"], kernels["kernels"]) == ("int8", "u8s8" if this_cpu().vnni else "u8u8")
    settings.embed.service_url = "http://127.0.0.1:9"  # nobody there: the service's choice is not known yet
    with TestClient(create_app(settings)) as client:
        kernels = client.get("/health").json()["text_kernels"]
    assert kernels["where"] == "embedding service" and kernels["kernels"] == "not loaded"


def test_a_space_whose_model_failed_is_off_with_it(tmp_path: Path) -> None:
    """The document space embeds with the text model: when that fails, both are off."""
    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = f"st:{tmp_path / 'no-such-model'}"
    with TestClient(create_app(settings)) as client:
        assert client.post("/corpora", json={"name": "c"}).status_code >= 400
        health = client.get("/health").json()
        assert health["serving"] == ["bm25"] and {"text", "document"} <= set(health["off"])


def test_metrics_as_json_name_the_configured_spaces(client: TestClient) -> None:
    body = client.get("/metrics", params={"format": "json"}).json()
    assert body["spaces"] == ["bm25", "document", "text"] and body["vlm"] is None
    assert client.get("/health/live").json() == {"status": "ok"}
    assert client.get("/health/ready").json()["checks"]["store"] == "ok"
