"""``mmrag config``: the effective settings, each with where its value came from."""

from __future__ import annotations

from typing import Annotated

import typer


def config(
    common: Annotated[bool, typer.Option("--common", help="Only the settings a person usually changes.")] = False,
) -> None:
    """Print every MMRAG_* setting: its value, and whether it came from the environment (env), the .env file
    (file) or the default; * marks the ones a person usually changes."""
    from mmrag.config import load_settings
    from mmrag.settings_doc import effective, show

    typer.echo("* = usually changed; source: env (environment), file (.env in this folder), default")
    for row, value, source in effective(load_settings()):
        if common and not row.common:
            continue
        typer.echo(f"{'*' if row.common else ' '} {row.env}={show(value)}  ({source})")
