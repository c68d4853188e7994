"""The core never imports its shells (api/, indexer/, cli/) nor their frameworks, read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELLS = {"api", "indexer", "cli", "fastapi", "starlette", "celery", "typer", "uvicorn", "rich"}


def imported_tops(path: Path) -> set[str]:
    """Top-level names of every absolute import in a module (lazy imports inside functions too)."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


def test_mmrag_imports_no_shell_and_no_shell_framework() -> None:
    found = {str(p.relative_to(ROOT)): sorted(imported_tops(p) & SHELLS) for p in (ROOT / "mmrag").rglob("*.py")}
    assert {p: names for p, names in found.items() if names} == {}
    assert imported_tops(ROOT / "cli" / "worker_cmd.py") & SHELLS == {"indexer", "typer"}  # the check sees them
