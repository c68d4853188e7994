"""The kill harness's invariants (:mod:`bench.faults`), read from a data folder while no server runs.

:func:`check_folder` opens the catalog, the vector store and the job state of a stopped server's data
folder and counts what a kill may have broken, against the documents a clean ingest of the same script
holds at the same point (``expected``: corpus -> {document id: pages}):

- ``lost``: an expected document the catalog does not list (or lists with fewer pages), or a listed page
  with no point in the store;
- ``duplicated``: a page with more than one point, or a catalog page row twice;
- ``stuck``: a job not finished (queued or running) once the harness let every job end;
- ``mismatched``: the store and the catalog disagree (a point of no listed document, or a page row of
  no listed document), or the catalog lists a document the script does not hold (a deletion undone).

:func:`compare_rankings` compares the same searches against the clean ingest's: ``mismatched`` when the
order or the scores differ, ``ties`` when they differ only in the order of equal scores.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

Expected = dict[str, dict[str, int]]  # corpus -> document id -> pages
Ranking = list[tuple[str, int, float]]  # (document id, page, score), best first
SCORE_TOLERANCE = 1e-4


@dataclass(slots=True)
class Findings:
    lost: int = 0
    duplicated: int = 0
    stuck: int = 0
    mismatched: int = 0
    ties: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, other: Findings) -> None:
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.stuck += other.stuck
        self.mismatched += other.mismatched
        self.ties += other.ties
        self.notes.extend(other.notes)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Findings:
        return cls(**json.loads(text))

    @property
    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.stuck or self.mismatched)


def expected_json(expected: Expected, optional: frozenset[str] = frozenset()) -> str:
    return json.dumps({"expected": expected, "optional": sorted(optional)})


def expected_from_json(text: str) -> tuple[Expected, frozenset[str]]:
    data = json.loads(text)
    return data["expected"], frozenset(data["optional"])


def check_folder(data_dir: Path, expected: Expected, optional: frozenset[str] = frozenset()) -> Findings:
    """:func:`check` on a stopped server's data folder."""
    from mmrag.catalog import Catalog
    from mmrag.jobs.state import JobStore
    from mmrag.store.edge import EdgeStore

    store = EdgeStore(data_dir / "qdrant-edge")
    try:
        return check(Catalog(data_dir), store, JobStore(data_dir), expected, optional)
    finally:
        store.close()


def check(catalog: Any, store: Any, jobs: Any, expected: Expected, optional: frozenset[str] = frozenset()) -> Findings:
    """The store, catalog and job invariants (``optional``: documents that may be listed or not, complete either
    way: one whose deletion a kill cut off, before the client sends it again)."""
    out = Findings()
    unfinished = jobs.unfinished()
    out.stuck += len(unfinished)
    out.notes += [f"job {j} unfinished" for j in unfinished]
    for corpus, docs in expected.items():
        listed = {d.id: d.page_count for d in catalog.documents.listed(corpus, limit=100_000)}
        for doc_id, pages in docs.items():
            if listed.get(doc_id) != pages:
                out.lost += 1
                out.notes.append(f"{corpus}: document {doc_id[:8]} listed with {listed.get(doc_id)} pages, "
                                 f"expected {pages}")
        for doc_id in listed.keys() - docs.keys() - optional:
            out.mismatched += 1
            out.notes.append(f"{corpus}: document {doc_id[:8]} listed, not in the script")
        points = Counter((h.payload["document_id"], h.payload["page"])
                         for h in store.scroll(corpus, limit=1_000_000))
        for (doc_id, page), n in points.items():
            if doc_id not in listed:
                out.mismatched += 1
                out.notes.append(f"{corpus}: point of page {page} of unlisted document {doc_id[:8]}")
            elif n > 1:
                out.duplicated += 1
                out.notes.append(f"{corpus}: page {page} of {doc_id[:8]} has {n} points")
        for doc_id, pages in listed.items():
            missing = [p for p in range(1, pages + 1) if (doc_id, p) not in points]
            if missing:
                out.lost += 1
                out.notes.append(f"{corpus}: document {doc_id[:8]} pages {missing} have no point")
        rows = Counter(p.document_id for p in catalog.pages.texts(corpus))
        for doc_id, n in rows.items():
            if doc_id not in listed:
                out.mismatched += 1
                out.notes.append(f"{corpus}: {n} page rows of unlisted document {doc_id[:8]}")
            elif n != listed[doc_id]:
                out.duplicated += 1
                out.notes.append(f"{corpus}: document {doc_id[:8]} has {n} page rows for {listed[doc_id]} pages")
    return out


def ranking(results: list[dict[str, Any]]) -> Ranking:
    """A search's results (the REST ``results``) as (document id, page, score)."""
    return [(r["document_id"], r["page"], float(r["score"])) for r in results]


def compare_rankings(got: dict[str, Ranking], want: dict[str, Ranking]) -> Findings:
    """Per search key, the same order and scores as the clean ingest (a difference among equal scores: a tie)."""
    out = Findings()
    for key, ref in want.items():
        run = got.get(key, [])
        same_order = [r[:2] for r in run] == [r[:2] for r in ref]
        same_scores = len(run) == len(ref) and all(
            abs(a[2] - b[2]) <= SCORE_TOLERANCE for a, b in zip(run, ref, strict=True))
        if same_order and same_scores:
            continue
        if same_scores and _tie_groups(run) == _tie_groups(ref):
            out.ties += 1
            out.notes.append(f"search {key}: order differs among equal scores")
        else:
            out.mismatched += 1
            at = next((i for i, (a, b) in enumerate(zip(run, ref, strict=False))
                       if a[:2] != b[:2] or abs(a[2] - b[2]) > SCORE_TOLERANCE), min(len(run), len(ref)))
            out.notes.append(f"search {key}: ranking differs from the clean ingest from rank {at + 1} "
                             f"({len(run)} vs {len(ref)} results): {run[at:at + 3]} vs {ref[at:at + 3]}")
    return out


def _tie_groups(r: Ranking) -> list[frozenset[tuple[str, int]]]:
    groups: list[frozenset[tuple[str, int]]] = []
    start = 0
    for i in range(1, len(r) + 1):
        if i == len(r) or abs(r[i][2] - r[start][2]) > SCORE_TOLERANCE:
            groups.append(frozenset(x[:2] for x in r[start:i]))
            start = i
    return groups
