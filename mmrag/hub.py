"""Is the model hub reachable? Asked once per process, quickly, before the first model loads.

Without a reachable hub, every optional model (CLIP, ColPali, the VLM) would spend the hub
clients' retries (over a minute in all) before being reported as unavailable. Every model loader
(the composition root's lazy embedders and VLM, ``mmrag embed-serve``) calls
:func:`go_offline_if_unreachable` before its first load, and ``scripts/serve`` runs
``python -m mmrag.hub``: when the hub does not answer within ``timeout_s``, ``HF_HUB_OFFLINE=1``
and ``TRANSFORMERS_OFFLINE=1`` are set, so local and cached models still load and the rest fail at
once with the hub client's offline message.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import urllib.error
import urllib.request

DEFAULT_ENDPOINT = "https://huggingface.co"
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
log = logging.getLogger(__name__)
_lock = threading.Lock()
_offline: bool | None = None  # the answer of this process, once asked


def hub_endpoint() -> str:
    """The hub URL the clients use (``HF_ENDPOINT``, as huggingface_hub reads it)."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def offline_already() -> bool:
    """True when the environment already says offline, read as huggingface_hub reads it
    (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` one of 1, on, yes, true)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().upper() in ("1", "ON", "YES", "TRUE")


def hub_reachable(timeout_s: float = 2.0, endpoint: str | None = None) -> bool:
    """One HEAD request to the hub (proxies from the environment apply). Any HTTP answer, even an
    error status, means reachable; no answer within ``timeout_s`` (DNS, refused, timeout) means not."""
    request = urllib.request.Request(endpoint or hub_endpoint(), method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):  # URLError, socket timeout, bad URL
        return False


def go_offline_if_unreachable(timeout_s: float = 2.0) -> bool:
    """Set the offline variables when the hub is unreachable; True when this process is offline.

    Decided once per process (later calls return the first answer, without a network call), and
    never with a network call when ``HF_HUB_OFFLINE`` is already set. Model loaders call it before
    their first load, so a process that loads no model (a CLI search over REST) never asks. If
    huggingface_hub was imported already (it read the variables then), its constant is switched too.
    """
    global _offline
    with _lock:
        if _offline is None:
            _offline = offline_already() or not hub_reachable(timeout_s)
            if _offline and not offline_already():
                log.info("model hub %s unreachable: offline mode (local and cached models only)", hub_endpoint())
                for name in OFFLINE_VARS:
                    os.environ[name] = "1"
            constants = sys.modules.get("huggingface_hub.constants")
            if _offline and constants is not None:
                constants.HF_HUB_OFFLINE = True  # type: ignore[attr-defined]
        return _offline


class _ModelLibraryRootFilter(logging.Filter):
    """Drops what open_clip logs through the root logger (its download failures, with the full hub error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}open_clip{os.sep}" in record.pathname)


def quiet_hub_clients() -> None:
    """Silence the model libraries' own retry and download-failure logs (our loaders log one line per
    model that is off, with its reason). Call before they are imported: they read these variables then."""
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_ModelLibraryRootFilter())


def main() -> None:
    """``python -m mmrag.hub``: exit 0 when the hub is reachable, 1 when not (for shell scripts)."""
    sys.exit(0 if hub_reachable() else 1)


if __name__ == "__main__":
    main()
