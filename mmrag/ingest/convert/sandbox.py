"""Run a converter as untrusted work: its own process group, CPU and memory limits, a wall-clock
limit that kills the whole group, a private temporary HOME, and no network where the kernel allows.

No network: as root (or with unprivileged user namespaces) the command runs under ``unshare -n``
in a network namespace of its own with no interfaces but a down loopback, so nothing it opens
can reach a host. Where that is not possible the callers still never ask for remote content
(HTML is stripped of remote URLs before conversion; LibreOffice runs with macros disabled).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mmrag.errors import TooLarge

log = logging.getLogger(__name__)


_OUT_OF_MEMORY = (b"MemoryError", b"std::bad_alloc", b"Cannot allocate memory", b"out of memory")


@dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float  # wall clock; the process group is SIGKILLed after it
    memory_bytes: int  # RLIMIT_AS of the converter
    what: str = "conversion"  # named in the error


@functools.cache
def network_isolation() -> list[str]:
    """The prefix that runs a command without network (``unshare -n`` or ``unshare -rn``), or []."""
    exe = shutil.which("unshare")
    if exe is None:
        return []
    for prefix in ([exe, "-n"], [exe, "-rn"]):
        try:
            ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return prefix
    log.warning("unshare cannot create a network namespace here; converters run with the host network "
                "(remote references are still stripped or never fetched)")
    return []


def _limit(memory_bytes: int, cpu_s: int) -> tuple[list[str], Callable[[], None] | None]:
    """``prlimit`` as a command prefix (safe in a threaded server), else a ``preexec_fn``."""
    exe = shutil.which("prlimit")
    if exe:
        return [exe, f"--as={memory_bytes}", f"--cpu={cpu_s}", "--core=0", "--"], None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return [], apply


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_limited(argv: list[str], limits: Limits, workdir: Path,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` in ``workdir`` (also its HOME and TMPDIR). Raises TooLarge when the time limit
    passes (the process group is killed), when it dies of its CPU limit, or runs out of memory."""
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "TMPDIR": str(workdir),
                "LANG": "C.UTF-8", **(env or {})}
    prefix, preexec = _limit(limits.memory_bytes, max(1, int(limits.timeout_s) + 1))
    proc = subprocess.Popen([*prefix, *network_isolation(), *argv], cwd=workdir, env=full_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate(timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise TooLarge(f"{limits.what} did not finish within the time limit of {limits.timeout_s:g} s and was "
                       "killed (MMRAG_INGEST__CONVERT_TIMEOUT_S)", detail={"limit": "convert_timeout_s"}) from None
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    _kill_group(proc)  # helpers it left behind in its group
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise TooLarge(f"{limits.what} ran past its CPU time limit and was killed "
                       "(MMRAG_INGEST__CONVERT_TIMEOUT_S)", detail={"limit": "convert_timeout_s"})
    if proc.returncode != 0 and any(m in err for m in _OUT_OF_MEMORY):
        raise TooLarge(f"{limits.what} ran out of its memory limit of {limits.memory_bytes:,} bytes "
                       "(MMRAG_INGEST__CONVERT_MEMORY_BYTES)", detail={"limit": "convert_memory_bytes"})
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
