"""mmrag.hub against real sockets on 127.0.0.1: a server that answers, one that never does, a closed
port. Each check runs in a fresh interpreter (the answer is kept per process)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.embed.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, sys
from mmrag.hub import go_offline_if_unreachable
first = go_offline_if_unreachable(timeout_s=float(sys.argv[1]))
second = go_offline_if_unreachable(timeout_s=float(sys.argv[1]))
print(json.dumps({"offline": first, "again": second, "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"),
                  "TRANSFORMERS_OFFLINE": os.environ.get("TRANSFORMERS_OFFLINE")}))
"""


def probe(endpoint: str, timeout_s: float = 2.0, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    out = subprocess.run([sys.executable, "-c", PROBE, str(timeout_s)], cwd=ROOT, capture_output=True, text=True,
                         env={**clean, "HF_ENDPOINT": endpoint, **env}, timeout=60, check=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


class CountingHub(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_HEAD(self) -> None:
        CountingHub.requests.append(self.path)
        self.send_response(401)  # any answer means reachable, even an error status
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def hub() -> Iterator[str]:
    CountingHub.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CountingHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_hub_that_answers_keeps_the_process_online_and_is_asked_once(hub: str) -> None:
    assert probe(hub) == {"offline": False, "again": False, "HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None}
    assert CountingHub.requests == ["/"]


def test_set_offline_variables_mean_no_network_call(hub: str) -> None:
    assert probe(hub, HF_HUB_OFFLINE="1")["offline"] is True
    assert probe(hub, TRANSFORMERS_OFFLINE="true")["offline"] is True
    assert CountingHub.requests == []


def test_a_closed_port_turns_the_process_offline() -> None:
    result = probe(f"http://127.0.0.1:{free_port()}")
    assert result == {"offline": True, "again": True, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_a_hub_that_never_answers_is_given_up_after_the_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (kernel backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        result = probe(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.3)
    assert result["offline"] is True and result["HF_HUB_OFFLINE"] == "1"


def test_scripts_serve_uses_the_same_check() -> None:
    script = (ROOT / "scripts" / "serve").read_text()
    assert "-m mmrag.hub" in script and "urllib" not in script
    closed = subprocess.run([sys.executable, "-m", "mmrag.hub"], cwd=ROOT, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"})
    assert closed.returncode == 1
