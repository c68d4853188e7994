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
                    device=service.options.device)

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    app = typer.Typer()
    app.command("embed-serve")(embed_cmd.embed_serve)
    app.command("other")(lambda: None)  # a multi-command app, like the real root
    args = ["embed-serve", "--port", "9009", "--model", "fake:8", "--model", "fake-mv:4",
            "--max-batch", "4", "--max-wait-ms", "2", "--device", "cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert seen["port"] == 9009 and seen["specs"] == ["fake:8", "fake-mv:4"] and seen["device"] == "cpu"
    assert seen["batching"].max_batch == 4 and seen["batching"].max_wait_ms == 2  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, ["embed-serve"])
    assert result.exit_code == 0 and seen["specs"] == embed_cmd.DEFAULT_MODELS
