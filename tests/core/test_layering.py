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


def imported_modules(path: Path) -> set[str]:
    """Every absolute module a file imports (lazy imports inside functions too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


STORAGE_MAY_IMPORT = ("mmrag.catalog", "mmrag.config", "mmrag.errors", "mmrag.types", "mmrag.doc_facts",
                      "mmrag.page_render", "mmrag.imaging", "mmrag.sqlite_db")


def test_storage_is_one_package_that_imports_no_stage() -> None:
    found = {str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m.startswith("mmrag")
                                              and not m.startswith(STORAGE_MAY_IMPORT))
             for p in (ROOT / "mmrag" / "catalog").rglob("*.py")}
    assert len(found) >= 8 and {p: names for p, names in found.items() if names} == {}
    assert "mmrag.catalog.page_images" in imported_modules(ROOT / "mmrag" / "catalog" / "__init__.py")


def test_the_job_writer_does_not_call_into_the_worker_stages() -> None:
    assert "mmrag.jobs.stages" not in imported_modules(ROOT / "mmrag" / "jobs" / "writer.py")
    assert "mmrag.jobs.spool" in imported_modules(ROOT / "mmrag" / "jobs" / "writer.py")  # what it reads instead


def test_shells_talk_only_to_the_root() -> None:
    """No route, command or task reaches past the pipeline into its catalog, spaces or the retriever's checks."""
    import re

    past_the_root = re.compile(r"(?<!spec\.)\bpipeline\.(catalog|spaces)\b|retriever\.validate\b")
    shells = [p for shell in ("api", "cli", "indexer") for p in (ROOT / shell).rglob("*.py")]
    found = {str(p.relative_to(ROOT)): past_the_root.findall(p.read_text()) for p in shells}
    assert len(shells) > 30 and {p: uses for p, uses in found.items() if uses} == {}
    assert past_the_root.search("x = app.state.pipeline.catalog.corpora.listed()")  # the check sees one
