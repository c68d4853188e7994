"""What may import what: the import-linter contracts of pyproject.toml ([tool.importlinter]) are all kept, and
the linter does see a broken one. Reaching past the root through attributes, which no import shows, is read from
the source."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def lint_imports(folder: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages in ``folder`` (the linter puts its working folder first on the path)."""
    return subprocess.run([sys.executable, "-c", LINT, str(config)], cwd=folder, capture_output=True, text=True,
                          timeout=300)


def test_every_import_contract_is_kept() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert {c["type"] for c in contracts} == {"layers", "forbidden", "independence", "acyclic_siblings"}
    run = lint_imports(ROOT, ROOT / "pyproject.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in run.stdout


def test_the_linter_sees_an_import_back_up(tmp_path: Path) -> None:
    package = tmp_path / "tinypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("from tinypkg import low\n")
    (package / "low.py").write_text("def f():\n    from tinypkg.high import low  # lazy: counts too\n")
    config = tmp_path / "contracts.toml"
    config.write_text('[tool.importlinter]\nroot_packages = ["tinypkg"]\n\n[[tool.importlinter.contracts]]\n'
                      'name = "high over low"\ntype = "layers"\ncontainers = ["tinypkg"]\nlayers = ["high", "low"]\n')
    run = lint_imports(tmp_path, config)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "high over low BROKEN" in run.stdout and "tinypkg.low -> tinypkg.high" in run.stdout
    (package / "low.py").write_text("X = 1\n")  # the same package without the import back up passes
    assert lint_imports(tmp_path, config).returncode == 0


def test_shells_reach_no_part_of_the_root_through_attributes() -> None:
    """No route, command or task reaches past the pipeline into its catalog, spaces or the retriever's checks
    (the contract ``shells-past-the-root`` sees imports only: ``pipeline.catalog`` imports nothing)."""
    past_the_root = re.compile(r"(?<!spec\.)\bpipeline\.(catalog|spaces)\b|retriever\.validate\b")
    shells = [p for shell in ("api", "cli", "indexer") for p in (ROOT / shell).rglob("*.py")]
    found = {str(p.relative_to(ROOT)): past_the_root.findall(p.read_text()) for p in shells}
    assert len(shells) > 30 and {p: uses for p, uses in found.items() if uses} == {}
    assert past_the_root.search("x = app.state.pipeline.catalog.corpora.listed()")  # the check sees one


def test_the_doors_reach_the_root_only_through_the_application() -> None:
    """The doors of contract ``doors-call-the-application`` import no part of the root, and none reaches it
    through an attribute either (``request.app.state.pipeline``, ``backend.pipeline``): they hold an application."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    doors = next(c for c in contracts if c.get("id") == "doors-call-the-application")["source_modules"]
    files = [ROOT / (name.replace(".", "/") + ".py") for name in doors]
    assert len(files) >= 10 and all(f.is_file() for f in files)
    # a pipeline object's attribute; not a suite spec's pipeline settings, nor the module mmrag.pipeline
    reach = re.compile(r"(?<!spec)(?<!mmrag)\.pipeline\b|(?<![.\w])pipeline\.\w")
    mentions = {str(f.relative_to(ROOT)): reach.findall(f.read_text()) for f in files}
    # the CLI's two maintenance commands own the data folder outright (folder_pipeline: no server may run)
    mentions["cli/commands.py"] = [m for m in mentions["cli/commands.py"] if m != "pipeline.c"]  # .corpora.re...
    assert reach.search("pipeline = request.app.state.pipeline") and not reach.search("suite.spec.pipeline.top_k")
    assert {f: found for f, found in mentions.items() if found} == {}
