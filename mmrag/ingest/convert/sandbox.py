"""Run a converter as untrusted work: a jail, CPU and memory limits, and a wall clock that kills it.

Isolation (``MMRAG_INGEST__CONVERT_ISOLATION``, docs/security.md):

``jail`` (default)
    bubblewrap (Debian ``bubblewrap``): a mount namespace whose root holds only what the converter
    needs, read-only (``/usr``, fonts, LibreOffice's ``/etc`` and ``/var/lib`` folders, the Python
    install and the PyMuPDF package, each named in :func:`jail_argv`), its own job folder
    read-write (the input copy, the output, HOME, TMPDIR) and fresh ``/proc`` and ``/dev``; new
    network, pid, ipc and uts namespaces; as uid 65534 with no capabilities when the service runs
    as root. Nothing else of the host is there: not the data folder, not the spool, not other
    tenants' files. Where bubblewrap cannot make the jail, conversion is refused (``Unavailable``,
    503), never run with less.
``network``
    only a network namespace of its own (``unshare -n``, or ``-rn`` with user namespaces): the
    converter reads whatever the service can read. Chosen explicitly, never by default.
``none``
    the limits alone. Chosen explicitly.

Lifecycle: stateless; :func:`isolation_state` probes the host once per mode and process.
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
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from mmrag.errors import TooLarge, Unavailable
from mmrag.ingest.convert.jail_mounts import MERGED_USR, Mount, merged_usr, mount_argv, read_mounts

log = logging.getLogger(__name__)

Isolation = Literal["jail", "network", "none"]
SETTING = "MMRAG_INGEST__CONVERT_ISOLATION"
JAIL_UID = 65534  # "nobody": the converter's uid when the service runs as root
INSIDE = Path("/job")  # the job folder as the jailed converter sees it
_OUT_OF_MEMORY = (b"MemoryError", b"std::bad_alloc", b"Cannot allocate memory", b"out of memory")
# what every jailed converter reads (when present on the host); the converter adds its own install
SYSTEM_READS = ("/usr", "/etc/fonts", "/etc/ld.so.cache")


@dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float  # wall clock; the process group is SIGKILLed after it
    memory_bytes: int  # RLIMIT_AS of the converter
    what: str = "conversion"  # named in the error


@dataclass(frozen=True, slots=True)
class IsolationState:
    """What ``/health`` reports: the configured mode and whether this host can give it."""

    mode: Isolation
    in_force: bool  # False: conversions are refused (503) until the host allows the mode
    detail: str  # how (bubblewrap version, uid) or why not

    def as_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "in_force": self.in_force, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class JobFolder:
    """A conversion's own folder: ``outside`` is where the service reads and writes it, ``inside`` the
    path the converter is given (``/job`` in the jail)."""

    outside: Path
    inside: Path
    root: Path  # the service-only parent (0700): the jail's passwd/group files live here
    uid: int | None = None  # the converter's uid, which must own what it writes (None: the service's)

    def put(self, name: str, data: bytes) -> Path:
        """Write an input file; returns the path to give the converter."""
        path = self.outside / name
        path.write_bytes(data)
        self.own(name)
        return self.inside / name

    def mkdir(self, name: str) -> Path:
        (self.outside / name).mkdir(parents=True, exist_ok=True)
        self.own(name)
        return self.inside / name

    def own(self, name: str) -> None:
        """Give ``name`` (and what is under it) to the converter's uid."""
        if self.uid is None:
            return
        top = self.outside / name
        for path in [top, *(top.rglob("*") if top.is_dir() else [])]:
            os.chown(path, self.uid, self.uid, follow_symlinks=False)

    def read(self, name: str) -> bytes | None:
        """An output file, or None when the converter made none (a regular file only: no links)."""
        path = self.outside / name
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_bytes()


def _jail_uid() -> int | None:
    return JAIL_UID if os.geteuid() == 0 else None


@contextlib.contextmanager
def job_folder(isolation: Isolation, parent: Path | None = None, prefix: str = "mmrag-conv-") -> Iterator[JobFolder]:
    """A fresh folder for one conversion under ``parent`` (MMRAG_INGEST__CONVERT_DIR, else the system
    temp folder), removed afterwards."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as tmp:
        root = Path(tmp)
        outside = root / "job"
        outside.mkdir(mode=0o700)
        if isolation == "jail":
            folder = JobFolder(outside, INSIDE, root, _jail_uid())
            folder.own(".")
            yield folder
        else:
            yield JobFolder(outside, outside, root)


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def jail_argv(folder: JobFolder, reads: Sequence[Path] = ()) -> list[str]:
    """The bubblewrap prefix that runs a command in the jail of ``folder``: every read-only path is
    named here (system paths that exist, then ``reads``); the job folder is the only writable one
    (at ``/job``, its ``tmp`` also at ``/tmp``). The mounts are ordered so that an install anywhere,
    even under ``/tmp`` or through a symlink, lands inside what the jail makes (:mod:`.jail_mounts`)."""
    exe = _bwrap()
    if exe is None:
        raise Unavailable("bubblewrap (bwrap) is not installed")
    argv = [exe, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session"]
    uid = _jail_uid()
    if uid is None:
        argv.append("--unshare-user")  # unprivileged: a user namespace, the service's own uid inside
    tmp = folder.outside / "tmp"
    if not tmp.is_dir():
        folder.mkdir("tmp")
    made = [*merged_usr(), *_identity(folder, uid if uid is not None else os.getuid()),
            Mount(PurePosixPath("/proc"), ("--proc", "/proc")), Mount(PurePosixPath("/dev"), ("--dev", "/dev")),
            Mount(PurePosixPath(INSIDE), ("--bind", str(folder.outside), str(INSIDE))),
            Mount(PurePosixPath("/tmp"), ("--bind", str(tmp), "/tmp"))]
    system = [*SYSTEM_READS, *(f"/{n}" for n in MERGED_USR)]
    argv += mount_argv([*made, *read_mounts([*system, *reads], made, folder.root.parent)])
    argv += ["--chdir", "/"]  # no relative paths: cwd is /
    if uid is not None:  # root: keep only what setpriv needs to become uid 65534, which then drops all
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return [*argv, "--"]


def _identity(folder: JobFolder, uid: int) -> list[Mount]:
    """/etc/passwd and /etc/group naming only the converter's user (LibreOffice looks itself up)."""
    (folder.root / "passwd").write_text(f"convert:x:{uid}:{uid}:converter:{INSIDE}:/usr/sbin/nologin\n")
    (folder.root / "group").write_text(f"convert:x:{uid}:\n")
    return [Mount(PurePosixPath("/etc/passwd"), ("--ro-bind", str(folder.root / "passwd"), "/etc/passwd")),
            Mount(PurePosixPath("/etc/group"), ("--ro-bind", str(folder.root / "group"), "/etc/group"))]


@functools.cache
def _network_prefix() -> tuple[str, ...]:
    """``unshare -n`` (root) or ``unshare -rn`` (user namespaces), or () where neither works."""
    exe = shutil.which("unshare")
    for prefix in ([exe, "-n"], [exe, "-rn"]) if exe else []:
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return tuple(prefix)
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def network_isolation() -> list[str]:
    """The prefix that runs a command without network (``unshare -n`` or ``-rn``), or []."""
    return list(_network_prefix())


@functools.cache
def isolation_state(mode: Isolation) -> IsolationState:
    """Whether this host can give ``mode`` (probed once per process: a jail that runs ``true``)."""
    if mode == "none":
        return IsolationState(mode, True, "no isolation: converters run with the service's rights and network "
                                          f"({SETTING}=none)")
    if mode == "network":
        prefix = _network_prefix()
        return IsolationState(mode, bool(prefix), f"network namespace ({' '.join(prefix)}); converters see the "
                                                  "service's files" if prefix else "unshare cannot make a network "
                                                  "namespace here (no root, no user namespaces)")
    exe = _bwrap()
    if exe is None:
        return IsolationState(mode, False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    with job_folder("jail") as folder:
        try:
            proc = subprocess.run([*jail_argv(folder), "/usr/bin/true"], capture_output=True, timeout=30,
                                  env={"PATH": "/usr/bin:/bin"})
            ok, why = proc.returncode == 0, proc.stderr.decode(errors="replace").strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, why = False, str(exc)
    if not ok:
        return IsolationState(mode, False, f"bubblewrap cannot make the jail here: {why or 'unknown error'}")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    uid = _jail_uid()
    who = f"uid {uid}, no capabilities" if uid is not None else f"the service's uid {os.getuid()} in a user namespace"
    return IsolationState(mode, True, f"{version or 'bubblewrap'} jail as {who}; no network; reads only the "
                                      "converter's install and its own job folder")


def require_isolation(mode: Isolation, what: str) -> None:
    """Raise Unavailable (503) when ``mode`` cannot be given here, naming the setting that allows less."""
    state = isolation_state(mode)
    if state.in_force:
        return
    weaker = "network (a network namespace only) or none" if mode == "jail" else "none"
    raise Unavailable(f"{what} is refused: the converter isolation {mode!r} cannot be made on this host "
                      f"({state.detail}). Allow it (bubblewrap, user namespaces) or set {SETTING}={weaker} to "
                      "accept a weaker isolation explicitly (docs/security.md)",
                      detail={"setting": SETTING, "isolation": mode})


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


# killed by its CPU limit or SIGKILL: directly (negative) or as bubblewrap reports a signalled child (128 + n)
_KILLED = {-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL}


def run_limited(argv: list[str], limits: Limits, workdir: Path,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` in ``workdir`` (also its HOME and TMPDIR) under the limits, without isolation.
    Raises TooLarge when the time limit passes (the process group is killed), when it dies of its
    CPU limit, or runs out of memory."""
    full_env = {"PATH": "/usr/bin:/bin", "HOME": str(workdir), "TMPDIR": str(workdir), "LANG": "C.UTF-8",
                **(env or {})}
    prefix, preexec = _limit(limits.memory_bytes, max(1, int(limits.timeout_s) + 1))
    proc = subprocess.Popen([*prefix, *argv], cwd=workdir if workdir.is_dir() else None, env=full_env,
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
    if proc.returncode in _KILLED:
        raise TooLarge(f"{limits.what} ran past its CPU time limit and was killed "
                       "(MMRAG_INGEST__CONVERT_TIMEOUT_S)", detail={"limit": "convert_timeout_s"})
    if proc.returncode != 0 and any(m in err for m in _OUT_OF_MEMORY):
        raise TooLarge(f"{limits.what} ran out of its memory limit of {limits.memory_bytes:,} bytes "
                       "(MMRAG_INGEST__CONVERT_MEMORY_BYTES)", detail={"limit": "convert_memory_bytes"})
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_converter(argv: list[str], limits: Limits, folder: JobFolder, isolation: Isolation,
                  reads: Sequence[Path] = (), env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run a converter on ``folder`` with the isolation asked for (refused, 503, where it cannot be
    given). ``reads``: the converter's own install, bound read-only into the jail."""
    require_isolation(isolation, limits.what)
    tmp = folder.mkdir("tmp")
    home = {"HOME": str(folder.inside), "TMPDIR": str(tmp), **(env or {})}
    if isolation == "jail":
        prefix = jail_argv(folder, reads)
    elif isolation == "network":
        prefix = network_isolation()
    else:
        prefix = []
    return run_limited([*prefix, *argv], limits, folder.outside, env=home)
