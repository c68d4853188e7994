"""Embedders that load by need: a process builds only the models its corpora use, when first used.

:class:`LazyEmbedder` stands in for a configured model: its ``spec`` is known at once, its
weights load on the first call that needs them (``dim``, ``modalities``, ``multivector``,
``max_batch``, ``embed_batch``). Creating a corpus with a space reads that space's ``dim``, so
it loads the model then; a search or an embedding job loads the models of the spaces it uses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from mmrag.embed.base import Embedder, Item, Kind
from mmrag.errors import MMRAGError, Unavailable
from mmrag.types import Modality

LOAD_ERRORS: tuple[type[BaseException], ...] = (MMRAGError, OSError, ValueError, RuntimeError, ImportError)
"""What a failed load may raise (offline hub, missing files, bad config, missing library)."""
State = Literal["not loaded", "loaded", "failed"]


class LazyEmbedder(Embedder):
    """Lifecycle: constructed with a spec and a loader (nothing is imported or loaded); the first use
    calls ``loader()`` once, under a lock (concurrent first users wait for that one load); later uses
    go straight to the loaded embedder. A failed load is remembered with its reason: every later use
    raises Unavailable with it, without loading again; ``on_failure(reason)`` is called once.
    With ``retry`` (a remote model: the service may come up later) every use after a failure tries
    again, and ``on_failure`` is called on each failure."""

    def __init__(self, spec: str, loader: Callable[[], Embedder],
                 on_failure: Callable[[str], None] | None = None, *, retry: bool = False) -> None:
        self.spec = spec
        self._loader, self._on_failure, self._retry = loader, on_failure, retry
        self._lock = threading.Lock()
        self._model: Embedder | None = None
        self.failure: str | None = None  # why the load failed (None: not failed)

    @property
    def state(self) -> State:
        if self._model is not None:
            return "loaded"
        return "failed" if self.failure is not None else "not loaded"

    def load(self) -> Embedder:
        """The loaded embedder (loading it now if needed); Unavailable with the reason if it cannot load."""
        if self._model is None:
            with self._lock:
                if self._model is None and (self.failure is None or self._retry):
                    self._load_once()
        if self._model is None:
            raise Unavailable(f"{self.spec} is not available: {self.failure}")
        return self._model

    def _load_once(self) -> None:
        try:
            self._model = self._loader()
            self.failure = None
        except LOAD_ERRORS as exc:
            self.failure = exc.message if isinstance(exc, MMRAGError) else f"{type(exc).__name__}: {exc}"
            if self._on_failure is not None:
                self._on_failure(self.failure)

    def usable(self) -> bool:
        """Load if needed; True when the model is there, False (reason in ``failure``) when it cannot load."""
        try:
            self.load()
        except Unavailable:
            return False
        return True

    @property
    def dim(self) -> int:  # type: ignore[override]  # read from the model once loaded
        return self.load().dim

    @property
    def modalities(self) -> frozenset[Modality]:  # type: ignore[override]  # read from the model once loaded
        return self.load().modalities

    @property
    def precision(self) -> str | None:  # type: ignore[override]  # read from the model once loaded
        return self.load().precision

    @property
    def kernels(self) -> str | None:  # type: ignore[override]  # read from the model once loaded
        return self.load().kernels

    @property
    def multivector(self) -> bool:  # type: ignore[override]  # read from the model once loaded
        return self.load().multivector

    @property
    def max_batch(self) -> int:  # type: ignore[override]  # read from the model once loaded
        return self.load().max_batch

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        return self.load().embed_batch(items, kind)

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        return self.load().prepare(items, kind)

    def size(self, prepared: Any) -> int:
        return self.load().size(prepared)

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        return self.load().compute(prepared, kind)


def usable(embedder: Embedder | None) -> bool:
    """Whether an embedder can be used here, loading a lazy one if it is not loaded yet."""
    if embedder is None:
        return False
    return embedder.usable() if isinstance(embedder, LazyEmbedder) else True


def model_states(embedders: Mapping[str, Embedder]) -> dict[str, dict[str, Any]]:
    """Per space: its model spec and ``state`` (loaded / not loaded / failed, with the reason); loads nothing."""
    out: dict[str, dict[str, Any]] = {}
    for space, embedder in embedders.items():
        if isinstance(embedder, LazyEmbedder):
            info: dict[str, Any] = {"model": embedder.spec, "state": embedder.state}
            if embedder.failure is not None:
                info["reason"] = embedder.failure
        else:
            info = {"model": embedder.spec, "state": "loaded"}
        out[space] = info
    return out


def one_line(reason: str, limit: int = 240) -> str:
    """The first line of an error text (hub clients write several, very long), cut to ``limit`` characters;
    for log lines and notices. The full text stays in ``/health``."""
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
