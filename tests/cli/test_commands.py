"""The command line registers every command group it is written with (a broken import fails loudly)."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from cli import app


def test_every_command_and_group_is_registered() -> None:
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    assert set(command.commands) == {"serve", "ingest", "search", "corpora", "reweight-bm25", "reindex-documents",
                                     "embed-serve",
                                     "answer", "eval", "worker", "keys", "rank", "mcp", "config"}
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert result.exit_code == 0 and "run" in result.output


def test_mcp_help_names_its_key_and_url() -> None:
    result = CliRunner().invoke(app, ["mcp", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--url" in result.output and "--key" in result.output
    assert "MMRAG_API_KEY" in result.output
