"""A corpus's own BM25 length statistics, and re-weighting its stored BM25 vectors when they drift.

BM25's stored values are normalised by an average page length (:mod:`mmrag.spaces.bm25`). With
``CorpusConfig.bm25_avg_len`` None that average is the corpus's own, kept by the single writer
(:class:`mmrag.jobs.writer.JobWriter`) in the catalog (:mod:`mmrag.catalog.bm25_lengths`, ``catalog.bm25``):

- ``bm25_lengths``: per document, its pages with BM25 tokens and their total length (written with the
  document's row, deleted with it; documents indexed before it existed are measured from their stored
  text on first use, :func:`backfill`);
- ``bm25_indexed``: the average the stored vectors were indexed with, whether some batch used another
  (a corpus's first job embeds with each batch's own average), and the pages added or deleted since.

A job's embed stage gets the indexed average in its manifest's corpus config (:func:`indexing_config`),
so all of a corpus's vectors share one average. What a job costs here depends on its own pages, not on the
corpus's:

- a document embedded with another average than the indexed one (its job was submitted before a re-weight)
  has its own pages' ``bm25`` vectors rewritten when it is recorded (:func:`record_document`);
- after a job, or a deletion, :func:`maybe_reweight` recomputes every page's BM25 vector from the catalog's
  text (no model: a few ms per 100 pages) and updates only the ``bm25`` vectors when the corpus's first
  documents used their batches' own averages, or when the corpus's average moved more than :data:`DRIFT`
  from the indexed one **and** the pages added or deleted since it was set are at least :data:`GROWTH` of the
  corpus. A re-weight of n pages therefore follows at least ``GROWTH * n`` changed pages: at most
  ``1 / GROWTH`` pages rewritten per page a job brings, whatever the corpus's size (and each rewritten point
  leaves its indexed segment, so the same bound holds for the indexing that follows).

``mmrag reweight-bm25 CORPUS`` does it on request, whatever the drift. The IDF is not stored: the engine
computes it at query time, over the live points once the collection has had a deletion
(:data:`mmrag.store.qdrant_request.IDF_OVER_LIVE_POINTS`), so deletions need no rewrite either.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.catalog.bm25_lengths import Bm25Indexed, Bm25Totals
from mmrag.config import CorpusConfig
from mmrag.ingest.ids import point_id
from mmrag.spaces.bm25 import Bm25Space, bm25_length, bm25_text
from mmrag.store.base import VectorStore, VectorValue
from mmrag.types import Document, section_line

log = logging.getLogger(__name__)

DRIFT = 0.2
"""Re-weight when the corpus's average is more than this fraction away from the indexed one..."""
GROWTH = 0.25
"""...and the pages added or deleted since the average was set are at least this fraction of the corpus's."""
BATCH = 512  # pages per store update


@dataclass(frozen=True, slots=True)
class Reweight:
    """What a re-weight did (logged; returned to the CLI)."""

    corpus: str
    pages: int  # points whose bm25 vector was rewritten
    avg_len: float  # the new average
    previous: float | None  # the average the vectors had (None: the batches' own)
    seconds: float  # the whole re-weight: the rewrite and the engine's re-indexing
    optimize_seconds: float = 0.0  # of which the re-indexing (:meth:`mmrag.store.base.VectorStore.optimize`)


def auto(config: CorpusConfig) -> bool:
    """Whether the corpus takes BM25's average from its own statistics."""
    return config.bm25_avg_len is None and "bm25" in config.spaces


def _document_texts(doc: Document) -> list[tuple[str, str]]:
    """(page id, the text BM25 indexes) of each page of a document being recorded."""
    return [(p.id, bm25_text(p.indexed_text, section_line(p.context))) for p in doc.pages]


def document_length(doc: Document) -> tuple[int, int]:
    """(pages with BM25 tokens, their total length) of a document, over the text BM25 indexes."""
    lengths = [bm25_length(text) for _, text in _document_texts(doc)]
    return sum(1 for n in lengths if n), sum(lengths)


def backfill(catalog: Catalog, corpus: str) -> int:
    """Record the lengths of documents indexed before the statistics existed; returns how many."""
    missing = catalog.bm25.documents_without_length(corpus)
    for doc_id in missing:
        lengths = [bm25_length(bm25_text(p.text, p.context)) for p in catalog.pages.texts(corpus, [doc_id])]
        catalog.bm25.set_length(corpus, doc_id, sum(1 for n in lengths if n), sum(lengths))
    return len(missing)


def corpus_totals(catalog: Catalog, corpus: str) -> Bm25Totals:
    """The corpus's pages with BM25 tokens and their total length (old documents measured first)."""
    backfill(catalog, corpus)
    return catalog.bm25.totals(corpus)


def corpus_avg_len(catalog: Catalog, corpus: str) -> float | None:
    """The corpus's mean BM25 length over its pages with tokens (None: no such page yet)."""
    totals = corpus_totals(catalog, corpus)
    return totals.length / totals.pages if totals.pages else None


def indexing_config(catalog: Catalog, corpus: str, config: CorpusConfig) -> CorpusConfig:
    """The corpus config a job's stages embed with: the indexed average filled in (None while the corpus
    has none: the embed stage then uses the batch's own average)."""
    if not auto(config):
        return config
    return config.model_copy(update={"bm25_avg_len": catalog.bm25.indexed(corpus).avg_len})


def record_document(catalog: Catalog, store: VectorStore, corpus: str, doc: Document,
                    embedded_with: CorpusConfig | None) -> None:
    """Before a document's catalog row (its points are written): its lengths, counted as changed pages once; its
    own ``bm25`` vectors rewritten if they used another average than the indexed one (``embedded_with``: the
    manifest's corpus config its batches were embedded with); while the corpus has no indexed average yet
    (its first documents: each batch's own), the corpus marked for a re-weight."""
    if not auto(catalog.corpora.config(corpus)):
        return
    pages, length = document_length(doc)
    catalog.bm25.set_length(corpus, doc.id, pages, length, count=True)  # recorded again after a crash: counted once
    indexed = catalog.bm25.indexed(corpus)
    if indexed.avg_len is None:
        if not indexed.stale:
            catalog.bm25.set_indexed(corpus, None, stale=True)
        return
    used = embedded_with.bm25_avg_len if embedded_with is not None else None
    if used != indexed.avg_len:
        _rewrite(store, corpus, _document_texts(doc), indexed.avg_len)


def record_deletion(catalog: Catalog, corpus: str, doc_id: str) -> None:
    """Before a document's catalog row is deleted: its pages counted as changed and its length dropped at once
    (a deletion a crash cut off and finished at the next start counts them once: a count that depended on
    where a kill fell would move the next re-weight, and so the rankings, away from a run without it)."""
    if auto(catalog.corpora.config(corpus)):
        catalog.bm25.drop_length(corpus, doc_id)


def reweight_due(indexed: Bm25Indexed, totals: Bm25Totals) -> bool:
    """Whether the corpus's vectors are due a re-weight (the module docstring says when)."""
    if not totals.pages:
        return False
    avg = indexed.avg_len
    if indexed.stale or avg is None:
        return True
    drifted = abs(totals.length / totals.pages - avg) > DRIFT * avg
    return drifted and indexed.changed >= GROWTH * totals.pages


def maybe_reweight(catalog: Catalog, store: VectorStore, corpus: str) -> Reweight | None:
    """Re-weight when :func:`reweight_due`."""
    if not catalog.corpora.exists(corpus) or not auto(catalog.corpora.config(corpus)):
        return None
    totals = corpus_totals(catalog, corpus)
    if not reweight_due(catalog.bm25.indexed(corpus), totals):
        return None
    return reweight(catalog, store, corpus, totals.length / totals.pages)


def reweight(catalog: Catalog, store: VectorStore, corpus: str, avg_len: float | None = None) -> Reweight:
    """Rewrite every page's ``bm25`` vector from its stored text with ``avg_len`` (default: the corpus's
    fixed value, or its own average), then optimise the collection; other vectors and payloads stay untouched.

    The engine copies every point whose vector is rewritten out of its indexed segment, so until the next
    optimise the corpus is searched without its HNSW graphs (a full scan of every dense and multi-vector space:
    the text stage 1.3 → 55 ms at 250,000 pages, ``bench/scale.py``'s folder). Every path that re-weights (a
    job's end, a deletion, a cancel, the start's catch-up, ``mmrag reweight-bm25``) comes through here, so
    none leaves the corpus unindexed until some later job."""
    t0 = time.perf_counter()
    config = catalog.corpora.config(corpus)
    if avg_len is None:
        avg_len = config.bm25_avg_len or corpus_avg_len(catalog, corpus) or 1.0
    previous = catalog.bm25.indexed(corpus).avg_len
    if auto(config):  # a rewrite cut off half-way is found stale and redone (at the next start or job end)
        catalog.bm25.set_indexed(corpus, previous, stale=True)
    done = _rewrite(store, corpus, [(p.page_id, bm25_text(p.text, p.context)) for p in catalog.pages.texts(corpus)],
                    avg_len)
    if auto(config):
        catalog.bm25.set_indexed(corpus, avg_len, stale=False)
    t1 = time.perf_counter()
    store.optimize(corpus)
    t2 = time.perf_counter()
    result = Reweight(corpus, done, avg_len, previous if auto(config) else config.bm25_avg_len, t2 - t0, t2 - t1)
    log.info("corpus %s: BM25 re-weighted %d pages to average length %.1f (was %s) in %.2fs (%.2fs re-indexing)",
             corpus, result.pages, avg_len, "batch averages" if result.previous is None else
             f"{result.previous:.1f}", result.seconds, result.optimize_seconds)
    return result


def _rewrite(store: VectorStore, corpus: str, pages: list[tuple[str, str]], avg_len: float) -> int:
    """Update the ``bm25`` vector of each (page id, BM25 text) with ``avg_len``; returns the points updated."""
    space = Bm25Space(avg_len)
    done = 0
    for i in range(0, len(pages), BATCH):
        part = pages[i:i + BATCH]
        vectors = space.text_vectors([text for _, text in part])
        updates: dict[str, dict[str, VectorValue]] = {
            point_id(pid): {"bm25": v} for (pid, _), v in zip(part, vectors, strict=True) if v is not None}
        store.update_vectors(corpus, updates)
        done += len(updates)
    return done
