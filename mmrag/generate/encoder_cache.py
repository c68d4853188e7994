"""Encoder cache: vision-encoder outputs reused across requests, LRU by bytes.

Bookkeeping only (like vLLM's ``EncoderCacheManager``): it stores opaque values with a byte
size under an :class:`EncoderCacheKey` and never runs a model, so it is unit-tested with fake
entries. The engine computes features on a miss and ``put``s them; a later request for the
same page (same bytes, same preprocessing, same model) skips the vision encoder.

Lifecycle: built once per engine with a byte capacity; ``get``/``put``/``pin``/``unpin`` are
called from any thread (one lock). Pinned entries (in use by a running request) are never
evicted; ``put`` of an entry that cannot fit even after evicting every unpinned entry is
refused (the caller simply uses its fresh features uncached).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EncoderCacheKey:
    """Everything the features depend on."""

    content_hash: str  # sha256 of the image bytes
    preprocess: str  # canonical preprocessing config, e.g. "qwen:h=812,w=616,min=3136,max=1003520"
    model: str  # model id (hub id or path)
    revision: str  # model revision ("" when unknown)
    dtype: str  # e.g. "float32", "bfloat16"

    def digest(self) -> str:
        """A stable id for external caches (e.g. vLLM ``multi_modal_uuids``)."""
        raw = "\x1f".join((self.content_hash, self.preprocess, self.model, self.revision, self.dtype))
        return hashlib.sha256(raw.encode()).hexdigest()[:32]


@dataclass(slots=True)
class EncoderCacheStats:
    """Counters since construction."""

    hits: int = 0
    misses: int = 0
    evicted: int = 0  # entries evicted to make room
    rejected: int = 0  # puts refused (larger than the free, unpinned room)
    entries: int = 0
    bytes_used: int = 0
    capacity_bytes: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass(slots=True)
class _Entry:
    value: Any
    nbytes: int
    pins: int = 0


class EncoderCache:
    """LRU map ``EncoderCacheKey -> value`` bounded by the sum of ``nbytes``."""

    def __init__(self, capacity_bytes: int) -> None:
        self._capacity = capacity_bytes
        self._entries: OrderedDict[EncoderCacheKey, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._stats = EncoderCacheStats(capacity_bytes=capacity_bytes)

    def get(self, key: EncoderCacheKey, *, pin: bool = False) -> Any | None:
        """The cached value (and mark it most recently used), or None; counts a hit or miss."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._stats.misses += 1
                return None
            self._stats.hits += 1
            self._entries.move_to_end(key)
            entry.pins += int(pin)
            return entry.value

    def __contains__(self, key: EncoderCacheKey) -> bool:
        """Presence without touching LRU order or counters."""
        with self._lock:
            return key in self._entries

    def put(self, key: EncoderCacheKey, value: Any, nbytes: int, *, pin: bool = False) -> bool:
        """Insert (or refresh) an entry, evicting least recently used unpinned ones; False if refused."""
        with self._lock:
            if key in self._entries:
                entry = self._entries[key]
                self._entries.move_to_end(key)
                entry.pins += int(pin)
                return True
            if nbytes > self._capacity or not self._make_room(nbytes):
                self._stats.rejected += 1
                return False
            self._entries[key] = _Entry(value, nbytes, int(pin))
            self._bytes += nbytes
            return True

    def unpin(self, key: EncoderCacheKey) -> None:
        """Release one pin taken by ``get(pin=True)`` or ``put(pin=True)``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.pins > 0:
                entry.pins -= 1

    def _make_room(self, nbytes: int) -> bool:
        free = self._capacity - self._bytes
        if free >= nbytes:
            return True
        unpinned = [k for k, e in self._entries.items() if e.pins == 0]  # LRU first
        if free + sum(self._entries[k].nbytes for k in unpinned) < nbytes:
            return False
        for k in unpinned:
            if self._capacity - self._bytes >= nbytes:
                break
            self._bytes -= self._entries.pop(k).nbytes
            self._stats.evicted += 1
        return True

    def clear(self) -> None:
        """Drop every unpinned entry (counters are kept)."""
        with self._lock:
            for k in [k for k, e in self._entries.items() if e.pins == 0]:
                self._bytes -= self._entries.pop(k).nbytes

    def stats(self) -> EncoderCacheStats:
        """A snapshot of the counters."""
        with self._lock:
            s = self._stats
            return EncoderCacheStats(
                s.hits, s.misses, s.evicted, s.rejected, len(self._entries), self._bytes, self._capacity
            )
