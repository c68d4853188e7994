"""The settings as a person reads them: every ``MMRAG_*`` variable with its default and meaning, read from
the settings classes themselves (their fields and the docstring under each), the few a person usually
changes marked; the effective settings with where each value came from (``mmrag config``); and the
README's configuration table, made from the same rows (``python -m mmrag.settings_doc --write README.md``;
a test fails when the README's copy is stale).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import sys
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mmrag.config import ENV_FILE, Settings

COMMON = (
    "data_dir", "api.host", "api.port", "api.auth", "store.url", "embed.text_model", "embed.text_precision",
    "embed.clip_model", "embed.colpali_model", "embed.service_url", "embed.device", "jobs.broker_url",
    "vlm.backend", "vlm.model", "vlm.vllm_url", "retrieve.ranking.ranker",
)
"""The settings a person usually changes (``mmrag config`` marks them; the README's table lists them)."""

TABLE_START = "<!-- settings table: made by `python -m mmrag.settings_doc --write README.md` -->"
TABLE_END = "<!-- end of settings table -->"


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One leaf setting."""

    path: tuple[str, ...]  # field names from Settings down, e.g. ("api", "port")
    default: Any  # the value when nothing sets it
    doc: str  # the docstring under the field, as one line
    common: bool  # one a person usually changes (COMMON)

    @property
    def env(self) -> str:
        return "MMRAG_" + "__".join(self.path).upper()


@cache
def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of ``model`` (and of its bases), as one line."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
        assert isinstance(body, ast.ClassDef)
        for stmt, after in zip(body.body, body.body[1:], strict=False):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(after, ast.Expr) \
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                docs[stmt.target.id] = " ".join(after.value.value.split())
    return docs


def setting_rows(model: type[BaseModel] = Settings, path: tuple[str, ...] = ()) -> list[SettingRow]:
    """Every leaf setting of ``model``, in declaration order (nested settings objects are walked)."""
    rows: list[SettingRow] = []
    docs = field_docs(model)
    for name, field in model.model_fields.items():
        here = (*path, name)
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            rows.extend(setting_rows(kind, here))
        else:
            rows.append(SettingRow(here, field.get_default(call_default_factory=True), docs.get(name, ""),
                                   ".".join(here) in COMMON))
    return rows


def _dotenv(path: Path) -> set[str]:
    """The upper-cased names a dotenv file sets."""
    if not path.is_file():
        return set()
    from dotenv import dotenv_values

    return {k.upper() for k in dotenv_values(path)}


def _value(settings: BaseModel, path: tuple[str, ...]) -> Any:
    value: Any = settings
    for name in path:
        value = getattr(value, name)
    return value


def effective(settings: Settings, environ: Mapping[str, str] | None = None,
              env_file: Path = Path(ENV_FILE)) -> Iterator[tuple[SettingRow, Any, str]]:
    """(row, value, source) of every setting; source: ``env`` (the environment), ``file`` (the ``.env``
    file) or ``default``."""
    env = {k.upper() for k in (os.environ if environ is None else environ)}
    in_file = _dotenv(env_file)
    for row in setting_rows():
        source = "env" if row.env in env else "file" if row.env in in_file else "default"
        yield row, _value(settings, row.path), source


def show(value: Any) -> str:
    """A value as one would write it in the environment (unset for None)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def readme_table() -> str:
    """The README's configuration table: the settings a person usually changes."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines += [f"| `{r.env}` | `{show(r.default)}` | {_markdown(r.doc)} |" for r in setting_rows() if r.common]
    return "\n".join([TABLE_START, *lines, TABLE_END])


def _markdown(doc: str) -> str:
    """A docstring line in Markdown: ``x`` and :mod:`x` roles as `x`; no table-breaking bars."""
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", doc.replace("``", "`")).replace("|", "/")


def with_table(readme: str) -> str:
    """``readme`` with its table (between the markers) replaced by :func:`readme_table`."""
    start, end = readme.index(TABLE_START), readme.index(TABLE_END) + len(TABLE_END)
    return readme[:start] + readme_table() + readme[end:]


if __name__ == "__main__":  # python -m mmrag.settings_doc [--write README.md]
    if sys.argv[1:2] == ["--write"]:
        target = Path(sys.argv[2])
        target.write_text(with_table(target.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(readme_table())
