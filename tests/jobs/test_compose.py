"""compose.yaml cannot run here (no Docker engine): check that it refers to things that exist —
CLI commands and options, Settings fields behind MMRAG_* variables, services, volumes, files."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import typer
import yaml

from cli import app
from mmrag.config import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def resolve_command(args: list[str]) -> Any:
    """The (click) command that ``mmrag <args>`` runs; its options must all exist."""
    cmd: Any = typer.main.get_command(app)
    i = 0
    while hasattr(cmd, "commands") and i < len(args) and not args[i].startswith("-"):
        assert args[i] in cmd.commands, f"`mmrag {' '.join(args[:i + 1])}` does not exist"
        cmd, i = cmd.commands[args[i]], i + 1
    options = {o for p in cmd.params for o in getattr(p, "opts", [])}
    for arg in args[i:]:
        if arg.startswith("--"):
            assert arg.split("=")[0] in options, f"`mmrag {' '.join(args[:i])}` has no option {arg}"
    return cmd


def settings_field(var: str) -> None:
    """MMRAG_A__B must name Settings.a.b."""
    model: type = Settings
    for part in var.removeprefix("MMRAG_").lower().split("__"):
        fields = model.model_fields  # type: ignore[attr-defined]
        assert part in fields, f"{var}: Settings has no field {part!r}"
        model = fields[part].annotation
        model = next((a for a in getattr(model, "__args__", ()) if hasattr(a, "model_fields")), model)


def test_services_and_roles(compose):
    services = compose["services"]
    assert {"api", "redis", "qdrant", "cpu-worker", "embed-worker", "writer", "embed", "vllm"} <= set(services)
    for name in ("api", "redis", "qdrant", "embed", "vllm"):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no health check"
    for name in ("embed", "vllm"):
        devices = services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["capabilities"] == ["gpu"], f"{name} reserves no GPU"
    roles = {n: s["command"][:2] for n, s in services.items() if s.get("build")}
    assert roles["cpu-worker"] == ["worker", "cpu"] and roles["embed-worker"] == ["worker", "gpu"]
    assert roles["writer"] == ["worker", "write"] and roles["api"] == ["serve", "--host"]


def test_commands_exist(compose):
    for svc in compose["services"].values():
        if svc.get("build"):  # our image: ENTRYPOINT is `mmrag`
            assert (ROOT / svc["build"]["context"] / svc["build"]["dockerfile"]).is_file()
            resolve_command(svc["command"])


def test_environment_is_known_to_settings_and_urls_name_services(compose):
    services = compose["services"]
    for name, svc in services.items():
        env = svc.get("environment") or {}
        for var, value in env.items():
            if var.startswith("MMRAG_"):
                settings_field(var)
                if var.endswith("_URL"):
                    host = urlparse(str(value)).hostname
                    assert host in services, f"{name}: {var} points at {host!r}, not a service"
        mmrag_env = {k: str(v) for k, v in env.items() if k.startswith("MMRAG_")}
        if mmrag_env:
            nested: dict = {}
            for var, value in mmrag_env.items():
                *path, leaf = var.removeprefix("MMRAG_").lower().split("__")
                node = nested
                for part in path:
                    node = node.setdefault(part, {})
                node[leaf] = value
            Settings.model_validate(nested)  # values parse


def test_volumes_and_dependencies(compose):
    services, volumes = compose["services"], set(compose["volumes"])
    for name, svc in services.items():
        for mount in svc.get("volumes", []):
            source = mount.split(":")[0]
            assert source in volumes, f"{name}: volume {source!r} is not declared"
        for dep in svc.get("depends_on") or {}:
            assert dep in services, f"{name} depends on unknown service {dep!r}"
    # the spool is shared by the API and every worker; the data folder by the API and the writer
    for name in ("api", "cpu-worker", "embed-worker", "writer"):
        mounts = {m.split(":")[1]: m.split(":")[0] for m in services[name]["volumes"]}
        assert mounts["/spool"] == "spool"
        assert services[name]["environment"]["MMRAG_JOBS__SPOOL_DIR"] == "/spool"
    assert {m.split(":")[0] for m in services["writer"]["volumes"]} >= {"data"}
