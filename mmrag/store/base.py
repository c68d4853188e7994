"""The vector-store seam: collection specs, points, multi-stage queries, one interface.

Queries mirror Qdrant's query API: a :class:`QueryNode` scores with a vector
(``using`` + ``vector``) or fuses its ``prefetch`` children (DBSF, or RRF with optional weights),
and a node with both prefetch and vector *reranks* the children's candidates.
The same plan runs on the embedded engine and on a server.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from mmrag.errors import InvalidInput

SpaceKind = Literal["dense", "multivector", "sparse"]
Quantization = Literal["none", "binary", "scalar"]
Datatype = Literal["float32", "float16", "turbo8", "turbo4"]
"""How an engine stores a dense or multi-vector's values: 4 or 2 bytes each, or Qdrant's TurboQuant codes of 8 or 4
bits (a random rotation, then a fixed quantiser: the storage itself is the quantised vector, no float copy kept)."""


@dataclass(frozen=True, slots=True)
class SpaceSpec:
    """One named vector of a collection."""

    name: str
    kind: SpaceKind
    dim: int = 0  # 0 for sparse
    index: bool = True  # False: no HNSW (full multi-vectors scored only in rerank)
    quantization: Quantization = "none"
    idf: bool = False  # sparse only: let the engine apply IDF (BM25)
    datatype: Datatype = "float32"  # dense and multi-vectors: how the engine stores each value
    graph: tuple[int, int] | None = None  # an indexed space's HNSW (m, ef_construct); None: the engine's (16, 100)


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    spaces: tuple[SpaceSpec, ...]
    keyword_indexes: tuple[str, ...] = ("document_id", "kind", "page_id")
    integer_indexes: tuple[str, ...] = ("page",)

    def space(self, name: str) -> SpaceSpec | None:
        return next((s for s in self.spaces if s.name == name), None)


@dataclass(frozen=True, slots=True)
class SparseVec:
    indices: list[int]
    values: list[float]


VectorValue = np.ndarray | SparseVec  # (dim,) dense, (n, dim) multi-vector, or sparse


@dataclass(slots=True)
class PointRecord:
    id: str  # UUID string
    vectors: dict[str, VectorValue]
    payload: dict[str, Any]


FIELD_NAME = re.compile(r"[\w-]+(\[\d*\])?")  # one payload field as Qdrant's key paths take it (unquoted)
FIELD_NAME_RULE = "letters, digits, '_' and '-' (dots separate nested fields)"


def check_field_name(path: str, what: str = "filter field") -> None:
    """A key path (``doc.periods``) both engines take; else InvalidInput naming the allowed characters (the
    engines would refuse the path with an error of their own)."""
    if not all(FIELD_NAME.fullmatch(part) for part in path.split(".")):
        raise InvalidInput(f"{what} {path!r} cannot be filtered on: a field name holds only {FIELD_NAME_RULE}")


@dataclass(slots=True)
class FilterSpec:
    """All conditions must hold. ``match`` values that are lists mean 'any of'."""

    match: dict[str, Any] = field(default_factory=dict)
    ranges: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # key -> (gte, lte)

    def empty(self) -> bool:
        return not self.match and not self.ranges


@dataclass(frozen=True, slots=True)
class ScoreFormula:
    """Qdrant's formula query (score boosting) as a prior on the first prefetch's score::

        score = $score[0] * (1 + sum(priors[i] * $score[i + 1]) + sum(boost for each condition that holds))

    over the points of the node's prefetches; a point missing from a prefetch counts 0 there, so only
    points the first prefetch found can score above 0. Conditions are payload filters (e.g. the page's
    document has one of the periods the query names)."""

    priors: tuple[float, ...]  # one per prefetch after the first
    boosts: tuple[tuple[float, FilterSpec], ...] = ()  # (added to the prior, condition)


@dataclass(frozen=True, slots=True)
class IndexSearch:
    """How a store's approximate searches of dense and multi-vector spaces run (``StoreConfig``'s, applied by
    the one translator to every stage that scores with a vector; docs/retrieval.md, "HNSW and recall")."""

    hnsw_ef: int | None = None  # candidates HNSW keeps on its walk (at least the stage's limit); None: the engine's
    full_scan_points: int = 0  # a collection of at most this many points: every vector stage scans every point

    def exact(self, points: int) -> bool:
        """Whether a collection of ``points`` points is searched by a full scan (the exhaustive answer)."""
        return 0 < points <= self.full_scan_points


@dataclass(slots=True)
class QueryNode:
    limit: int
    using: str | None = None  # named vector to score with
    vector: VectorValue | None = None
    prefetch: list[QueryNode] = field(default_factory=list)
    fusion: Literal["rrf", "dbsf"] | None = None  # fuse prefetch results (RRF or distribution-based)
    formula: ScoreFormula | None = None  # or combine the prefetches' scores (and payload boosts) by a formula
    rrf_k: int = 60
    weights: list[float] | None = None  # one per prefetch (RRF)
    filter: FilterSpec | None = None
    rescore: bool = True  # with quantised vectors: rescore with the originals
    exact: bool = False  # score every point (no HNSW, no quantised copy): the exhaustive answer, for measuring recall
    score_threshold: float | None = None  # only results scoring at least this (the whole node's final score)


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    score: float
    payload: dict[str, Any]
    vectors: dict[str, Any] = field(default_factory=dict)


def score_order(score: float, key: str) -> tuple[float, str]:
    """The order of scored results everywhere: best first; equal scores (to 6 decimals) by ``key`` (a point or
    page id, which sort alike: a point id is its page id as a UUID), so a tie never falls to an engine's
    internal order (segment, insertion, thread) and two searches, two stores, two engines agree."""
    return -round(score, 6), key


def in_score_order(hits: list[Hit]) -> list[Hit]:
    """``hits`` as an engine returned them, each group of tied scores re-sorted by point id (:func:`score_order`)."""
    return sorted(hits, key=lambda h: score_order(h.score, h.id))


class VectorStore(abc.ABC):
    """Lifecycle: open once per process (embedded engines lock their folder), ``close`` at exit.
    Collections are named by corpus; all methods are thread-safe."""

    index: IndexSearch = IndexSearch()  # how its approximate searches run (the store's config)

    @abc.abstractmethod
    def create_collection(self, name: str, spec: CollectionSpec) -> None: ...

    @abc.abstractmethod
    def delete_collection(self, name: str) -> None: ...

    @abc.abstractmethod
    def has_collection(self, name: str) -> bool: ...

    @abc.abstractmethod
    def upsert(self, name: str, points: list[PointRecord]) -> None: ...

    @abc.abstractmethod
    def delete(self, name: str, flt: FilterSpec) -> None: ...

    @abc.abstractmethod
    def update_vectors(self, name: str, vectors: dict[str, dict[str, VectorValue]]) -> None:
        """Replace the named vectors given per point id (``{id: {"bm25": ...}}``) of existing points; their
        other vectors and payload stay as they are."""

    @abc.abstractmethod
    def set_payload(self, name: str, flt: FilterSpec, payload: dict[str, Any]) -> None:
        """Set the given top-level payload keys on every point ``flt`` matches (other keys stay)."""

    @abc.abstractmethod
    def query(self, name: str, node: QueryNode, *, with_vectors: list[str] | None = None,
              payload: list[str] | None = None) -> list[Hit]:
        """The plan's hits, best first; ``payload``: only these payload fields (None: all of it; []: none,
        which is far cheaper: an engine reads a point's whole stored payload to select any field of it)."""

    @abc.abstractmethod
    def count(self, name: str, flt: FilterSpec | None = None) -> int: ...

    @abc.abstractmethod
    def scroll(self, name: str, flt: FilterSpec | None = None, limit: int = 10_000,
               with_vectors: list[str] | None = None) -> list[Hit]: ...

    def optimize(self, name: str) -> None:  # noqa: B027  (optional hook)
        """Build indexes and quantised copies now (engines that defer them); a no-op by default."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Flush and release resources."""
