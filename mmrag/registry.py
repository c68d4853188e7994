"""Registries of named plug-ins: embedder backends (by spec prefix), VLM backends and spaces.

An entry is the plug-in itself or its ``module:attribute`` path (the attribute may be dotted), imported the
first time the name is used (:func:`resolve`, the one resolver of such paths). The built-ins are registered
the same way an extension would be; a third-party package adds its own through a Python entry point of the
registry's group (``[project.entry-points."mmrag.spaces"] mine = "mypkg.spaces:MySpace"``), read when the
registry is first asked, never imported before its name is used. A setting that names a plug-in is checked
against the registry at start-up (:meth:`Registry.check`): the error lists what is registered.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Generic, TypeVar, cast

from mmrag.errors import InvalidInput, NotFound

T = TypeVar("T")

def resolve(path: str) -> object:
    """The object a ``package.module:attribute`` path names (``attribute`` may be dotted: ``Class.method``),
    importing the module; InvalidInput when the path is not of that form."""
    module, sep, attribute = path.partition(":")
    if not sep or not module or not attribute:
        raise InvalidInput(f"{path!r} must look like 'package.module:attribute'")
    target: object = importlib.import_module(module)
    for name in attribute.split("."):
        target = getattr(target, name)
    return target


class Registry(Generic[T]):
    """Names -> plug-ins (``T``) or their ``module:attribute`` paths, resolved once on first use.

    Lifecycle: one per kind of plug-in, a module-level table of paths (nothing imported at import time);
    :meth:`register` adds or replaces a name; the entry points of ``group`` join on the first question,
    beside the built-ins and never over a name registered already."""

    def __init__(self, what: str, builtins: Mapping[str, str], group: str,
                 check: Callable[[object], bool] = callable) -> None:
        self.what = what  # "embedder backend", "VLM backend", "space": how errors name an entry
        self.group = group  # the entry-point group read on the first question
        self.entries: dict[str, str | T] = dict(builtins)  # name -> plug-in, or its path until first used
        self._check = check  # what a resolved path must be (callable: a factory; a class test for spaces)
        self._discovered = False
        self._lock = threading.Lock()

    def register(self, name: str, entry: str | T) -> None:
        """Serve ``name`` with ``entry`` (a plug-in or its ``module:attribute`` path); replaces an earlier one."""
        self.entries[name] = entry

    def names(self) -> list[str]:
        """Every registered name, in registration order (the built-ins first, then the entry points)."""
        self._discover()
        return list(self.entries)

    def check(self, name: str, setting: str) -> None:
        """Refuse a ``setting`` (``MMRAG_X=value``) naming no registered entry (start-up), listing those that are."""
        if name not in self.names():
            raise InvalidInput(f"{setting} names no registered {self.what} ({name!r}); registered: "
                               f"{', '.join(self.names())}")

    def get(self, name: str) -> T:
        """The plug-in of ``name``, importing its path the first time; NotFound lists the registered names."""
        self._discover()
        entry = self.entries.get(name)
        if entry is None:
            raise NotFound(f"unknown {self.what} {name!r}; known: {', '.join(self.entries)}")
        if not isinstance(entry, str):
            return entry
        target = resolve(entry)
        if not self._check(target):
            raise InvalidInput(f"{self.what} {name!r}: {entry!r} is not one ({type(target).__name__})")
        plugin = cast(T, target)  # what _check accepts
        self.entries[name] = plugin
        return plugin

    def _discover(self) -> None:
        """Add the entry points of :attr:`group` (their ``module:attribute`` values, not imported yet)."""
        if self._discovered:
            return
        with self._lock:
            if not self._discovered:
                for point in entry_points(group=self.group):
                    self.entries.setdefault(point.name, point.value)
                self._discovered = True
