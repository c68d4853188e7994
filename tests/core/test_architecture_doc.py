"""docs/architecture.md names the code where each stage lives: every path and module it names exists,
and every ``name`` it puts beside a module is defined in that module."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
SHELLS = ("mmrag", "api", "indexer", "cli")
_PATH = re.compile(r"`((?:mmrag|api|indexer|cli|docs|tests|bench|eval|scripts)/[\w/.\-]*)`")
_BARE = re.compile(r"`([\w\-]+\.py)`")
_DEFINED = re.compile(r"`((?:mmrag|api|indexer|cli)/[\w/]+\.py)` `(\w+)`")


def test_every_path_it_names_exists() -> None:
    paths = set(_PATH.findall(DOC))
    assert len(paths) > 20  # the table of stages is there and read
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_every_bare_module_name_is_a_module_of_the_code() -> None:
    names = set(_BARE.findall(DOC))
    modules = {p.name for shell in SHELLS for p in (ROOT / shell).rglob("*.py")}
    assert names and sorted(names - modules) == []


def test_names_beside_a_module_are_defined_there() -> None:
    pairs = _DEFINED.findall(DOC)
    assert len(pairs) > 8
    missing = [(path, name) for path, name in pairs
               if not re.search(rf"^\s*(?:def|class|async def)\s+{name}\b|^\s*{name}\s*[:=]|^\s*def {name}\(",
                                (ROOT / path).read_text(), re.M)]
    assert missing == []
