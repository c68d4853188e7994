"""The ``embed-serve`` command function registers on a typer app and parses its options."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from cli import embed_cmd


def test_embed_serve_options_reach_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_run(app: object, host: str, port: int, log_level: str) -> None:
        service = app.state.service  # type: ignore[attr-defined]
        seen.update(host=host, port=port, specs=service.specs, batching=service.batching,
                    device=service.options.device, precision=service.options.text_precision)

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    app = typer.Typer()
    app.command("embed-serve")(embed_cmd.embed_serve)
    app.command("other")(lambda: None)  # a multi-command app, like the real root
    args = ["embed-serve", "--port", "9009", "--model", "fake:8", "--model", "fake-mv:4",
            "--max-batch", "4", "--max-wait-ms", "2", "--device", "cpu", "--text-precision", "int8"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen["port"] == 9009 and seen["specs"] == ["fake:8", "fake-mv:4"] and seen["device"] == "cpu"
    assert seen["batching"].max_batch == 4 and seen["batching"].max_wait_ms == 2  # type: ignore[attr-defined]
    assert seen["precision"] == "int8"
    monkeypatch.setenv("MMRAG_EMBED__TEXT_PRECISION", "float32")  # the setting is the default
    assert CliRunner().invoke(app, ["embed-serve", "--model", "fake:8"]).exit_code == 0
    assert seen["precision"] == "float32"
    monkeypatch.delenv("MMRAG_EMBED__TEXT_PRECISION")
    result = CliRunner().invoke(app, ["embed-serve", "--text-precision", "fp16"])
    said = " ".join(result.output.replace("│", " ").split())  # rich boxes and wraps the message
    assert result.exit_code == 2 and "'fp16' is not one of: auto, float32, int8, bf16" in said, said
    result = CliRunner().invoke(app, ["embed-serve"])
    assert result.exit_code == 0 and seen["specs"] == embed_cmd.DEFAULT_MODELS
