"""The mounts of the converter jail, in an order bubblewrap can make wherever the service is installed.

The jail makes some paths itself: ``/proc``, ``/dev``, the job folder at ``/job``, ``/tmp`` (a bind
of the job's own ``tmp`` folder, not a symlink: an install under ``/tmp`` must be able to sit inside
it) and ``/etc/passwd`` / ``/etc/group``. The converter's install is bound read-only at its real path
(symlinks resolved) and, when it was named through a symlink, at that path too. Every mount is made
after the mounts of its parents (sorted by depth), each missing parent is made as a folder, so an
install under ``/tmp``, ``/job``, a path with spaces or a symlinked folder lands inside whatever the
jail made there. A read-only bind that would show the host folder holding the job folders (other
conversions' inputs) gets an empty tmpfs over that folder.

Lifecycle: pure functions over paths; :func:`mount_argv` is called once per conversion.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MERGED_USR = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
FRESH = (PurePosixPath("/proc"), PurePosixPath("/dev"))  # made new by bubblewrap: nothing is bound inside


@dataclass(frozen=True, slots=True)
class Mount:
    dest: PurePosixPath  # where the converter sees it
    options: tuple[str, ...]  # the bubblewrap options that make it (the destination last)


def _below(path: PurePosixPath, top: PurePosixPath) -> bool:
    """``path`` is ``top`` or inside it."""
    return path == top or top in path.parents


def _abs(path: Path | str) -> PurePosixPath:
    """``path`` made absolute and normalised (``..`` folded), symlinks kept."""
    return PurePosixPath(os.path.normpath(os.path.abspath(path)))


def merged_usr() -> list[Mount]:
    """``/bin -> usr/bin`` and the like, as symlinks, where the host has them (merged /usr)."""
    return [Mount(PurePosixPath("/", n), ("--symlink", os.readlink(f"/{n}"), f"/{n}"))
            for n in MERGED_USR if os.path.islink(f"/{n}")]


def read_mounts(paths: Sequence[Path | str], made: Sequence[Mount], job_parent: Path) -> list[Mount]:
    """Read-only binds of ``paths`` (absent ones skipped), each at its real path and where it was
    named; none inside another, none over a path the jail makes (``made``) or inside ``/proc``, ``/dev``.
    ``job_parent``: the host folder holding the job folders, hidden under a tmpfs wherever a bind shows it."""
    symlinks = {m.dest for m in made if m.options[0] == "--symlink"}
    taken = {m.dest for m in made}
    wanted: dict[PurePosixPath, str] = {}  # destination -> source (a real path)
    for path in paths:
        if not os.path.lexists(path) or not os.path.exists(path):
            continue
        real = os.path.realpath(path)
        for dest in dict.fromkeys((_abs(real), _abs(path))):
            if dest in taken or any(_below(dest, f) for f in FRESH):
                continue
            if any(s in dest.parents for s in symlinks):
                continue  # /lib/x on a merged-/usr host: the symlink already leads to /usr, which is bound
            wanted.setdefault(dest, real)
    keep = {d: s for d, s in wanted.items() if not any(o in d.parents for o in wanted)}
    mounts = [Mount(d, ("--ro-bind", s, str(d))) for d, s in keep.items()]
    return mounts + _hide_jobs(keep, _abs(os.path.realpath(job_parent)))


def _hide_jobs(binds: dict[PurePosixPath, str], job_parent: PurePosixPath) -> list[Mount]:
    out = []
    for dest, source in binds.items():
        real = PurePosixPath(source)
        if _below(job_parent, real):
            hidden = dest / job_parent.relative_to(real)
            out.append(Mount(hidden, ("--perms", "0755", "--tmpfs", str(hidden))))
    return out


def mount_argv(mounts: Sequence[Mount]) -> list[str]:
    """The options for ``mounts``, parents first (stable by depth), each missing ancestor made as a
    folder (mode 0755; bubblewrap as root would make it 0700)."""
    made: set[PurePosixPath] = {PurePosixPath("/")}
    argv: list[str] = []
    for mount in sorted(mounts, key=lambda m: len(m.dest.parts)):
        for parent in reversed(mount.dest.parents):
            if parent not in made:
                argv += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        argv += mount.options
        made.add(mount.dest)
    return argv
