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
    settings = load_settings()
    for row, value, source in effective(settings):
        if common and not row.common:
            continue
        typer.echo(f"{'*' if row.common else ' '} {row.env}={show(value)}  ({source})")
    if settings.embed.service_url:
        typer.echo(f"text model kernels: chosen by the embedding service at {settings.embed.service_url} (its /health)")
    else:
        from mmrag.cpu_kernels import kernels_here

        chosen = kernels_here(settings.embed.text_precision, settings.embed.device)
        typer.echo(f"text model kernels on this CPU ({chosen.cpu}): {chosen.label}: {chosen.reason}")
