"""Stage outputs as data: JSON for the structure, ``.npy`` arrays for bytes and vectors, one ``.npz``.

Reading a spool file never runs code: :func:`loads` rebuilds only plain values, and the dataclasses,
enums and pydantic models of the ``mmrag`` package it is told of by name (constructed with their
fields, nothing else); arrays load with ``allow_pickle=False``. So a process that could write the
spool (a compromised converter, say) cannot make the workers that read it run anything.

Encoding: JSON values stay themselves; everything else is a one-key object::

    {"m": {...}}            a dict with str keys         {"kv": [[k, v], ...]}  any other dict
    {"t": [...]}            a tuple                      {"b": i}               bytes (array i, uint8)
    {"a": i}                a numpy array                {"s": i}               a numpy scalar (0-d array i)
    {"o": c, "v": [...]}    dataclass c (its init fields, in order)
    {"e": c, "v": value}    enum member                  {"p": c, "v": {...}}   pydantic model
    {"O": c, "c": [col...]} a list of dataclass c (16 or more, e.g. a page's words), by column: each
                            {"j": [...]} (JSON scalars), {"tf": i} (tuples of floats, array i) or {"l": [...]}
    c indexes the file's class table, each "module:QualName" inside mmrag.

Records are not versioned: a dataclass is stored by its fields' values in order, so a file whose
record has another number of fields than this version's class (spooled by an older or newer
version) is refused with :class:`SpoolFormatError` naming the class (the stage fails the file with
that reason), never read into the wrong fields.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import json
from typing import Any

import numpy as np
from pydantic import BaseModel

from mmrag.errors import MMRAGError
from mmrag.registry import resolve

_COLUMNS = 16  # lists of at least this many dataclasses of one kind are stored by column


class SpoolFormatError(MMRAGError):
    """A spool file that is not what this version writes (or names a class outside mmrag)."""

    code = "internal_error"


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.classes: list[str] = []
        self._index: dict[type, int] = {}

    def cls(self, kind: type) -> int:
        if kind not in self._index:
            name = f"{kind.__module__}:{kind.__qualname__}"
            if not name.startswith("mmrag."):
                raise SpoolFormatError(f"cannot spool a {name}: only mmrag types are spooled")
            self._index[kind] = len(self.classes)
            self.classes.append(name)
        return self._index[kind]

    def columns(self, items: list[Any]) -> dict[str, Any]:
        fields = [f.name for f in dataclasses.fields(items[0]) if f.init]
        return {"O": self.cls(type(items[0])), "c": [self.column([getattr(v, f) for v in items]) for f in fields]}

    def column(self, values: list[Any]) -> dict[str, Any]:
        if all(v is None or type(v) in (str, int, float, bool) for v in values):
            return {"j": values}
        first = values[0]
        if type(first) is tuple and all(type(v) is tuple and len(v) == len(first) and all(type(x) is float for x in v)
                                        for v in values):
            return {"tf": self.array(np.array(values, dtype=np.float64))}
        return {"l": [self.encode(v) for v in values]}

    def array(self, value: np.ndarray) -> int:
        if value.dtype == object:
            raise SpoolFormatError("cannot spool an object array")
        self.arrays.append(value)
        return len(self.arrays) - 1

    def encode(self, value: Any) -> Any:
        if isinstance(value, enum.Enum):  # before str and int: StrEnum, IntEnum members are those too
            return {"e": self.cls(type(value)), "v": value.value}
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return {"b": self.array(np.frombuffer(bytes(value), dtype=np.uint8))}
        if isinstance(value, np.ndarray):
            return {"a": self.array(value)}
        if isinstance(value, np.generic):
            return {"s": self.array(np.asarray(value))}
        if isinstance(value, list):
            if len(value) >= _COLUMNS and dataclasses.is_dataclass(value[0]) and all(
                    type(v) is type(value[0]) for v in value):
                return self.columns(value)
            return [self.encode(v) for v in value]
        if isinstance(value, tuple):
            return {"t": [self.encode(v) for v in value]}
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value):
                return {"m": {k: self.encode(v) for k, v in value.items()}}
            return {"kv": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = [f.name for f in dataclasses.fields(value) if f.init]
            return {"o": self.cls(type(value)), "v": [self.encode(getattr(value, f)) for f in fields]}
        if isinstance(value, BaseModel):
            return {"p": self.cls(type(value)), "v": value.model_dump(mode="json")}
        raise SpoolFormatError(f"cannot spool a {type(value).__name__}")


def dumps(value: Any) -> bytes:
    """One ``.npz`` holding ``value``."""
    enc = _Encoder()
    structure = enc.encode(value)
    header = json.dumps({"classes": enc.classes, "value": structure}, separators=(",", ":")).encode()
    buf = io.BytesIO()
    arrays = {"structure": np.frombuffer(header, dtype=np.uint8), **{f"a{i}": a for i, a in enumerate(enc.arrays)}}
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub types the first keyword as allow_pickle
    return buf.getvalue()


def _resolve(name: str) -> type:
    module, _, qualname = name.partition(":")
    if not module.startswith("mmrag.") or not qualname:
        raise SpoolFormatError(f"the spool names {name!r}, which is not an mmrag type")
    obj = resolve(name)
    if not isinstance(obj, type) or not (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum | BaseModel)):
        raise SpoolFormatError(f"the spool names {name!r}, which is not a dataclass, enum or model")
    return obj


class _Decoder:
    def __init__(self, classes: list[str], arrays: Any) -> None:
        self.classes = [_resolve(c) for c in classes]
        self.arrays = arrays

    def decode(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return [self.decode(v) for v in value] if isinstance(value, list) else value
        tag, body = next(iter(value.items()))
        if tag == "m":
            return {k: self.decode(v) for k, v in body.items()}
        if tag == "kv":
            return {self.decode(k): self.decode(v) for k, v in body}
        if tag == "t":
            return tuple(self.decode(v) for v in body)
        if tag == "b":
            return self.arrays[f"a{body}"].tobytes()
        if tag == "a":
            return self.arrays[f"a{body}"]
        if tag == "s":
            return self.arrays[f"a{body}"][()]
        kind = self.classes[body]
        if tag == "O":
            columns = [self.column(c) for c in value["c"]]
            _same_fields(kind, len(columns))
            return [kind(*row) for row in zip(*columns, strict=True)]
        inner = value["v"]
        if tag == "o":
            names = _same_fields(kind, len(inner))
            return kind(**dict(zip(names, (self.decode(v) for v in inner), strict=True)))
        if tag == "e":
            return kind(inner)
        if tag == "p":
            return kind.model_validate(inner)  # type: ignore[attr-defined]
        raise SpoolFormatError(f"unknown spool tag {tag!r}")


    def column(self, col: dict[str, Any]) -> list[Any]:
        if "j" in col:
            return list(col["j"])
        if "tf" in col:
            return [tuple(row) for row in self.arrays[f"a{col['tf']}"].tolist()]
        return [self.decode(v) for v in col["l"]]


def _same_fields(kind: type, stored: int) -> list[str]:
    """The init fields of dataclass ``kind``, when a record of it holds as many values."""
    names = [f.name for f in dataclasses.fields(kind) if f.init]
    if stored != len(names):
        raise SpoolFormatError(f"the spool holds a {kind.__qualname__} of {stored} fields; this version's has "
                               f"{len(names)} ({', '.join(names)}): it was spooled by another version of mmrag")
    return names


def loads(data: bytes) -> Any:
    """The value :func:`dumps` wrote."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            header = json.loads(npz["structure"].tobytes())
            arrays = {k: npz[k] for k in npz.files if k != "structure"}
    except (ValueError, OSError, KeyError, json.JSONDecodeError) as exc:
        raise SpoolFormatError(f"not a spool file of this version ({exc})") from exc
    return _Decoder(header["classes"], arrays).decode(header["value"])
