"""A corpus's own BM25 length statistics, and re-weighting its stored BM25 vectors when they drift.

BM25's stored values are normalised by an average page length (:mod:`mmrag.spaces.bm25`). With
``CorpusConfig.bm25_avg_len`` None that average is the corpus's own, kept by the single writer
(:class:`mmrag.jobs.writer.JobWriter`) in the catalog (:mod:`mmrag.catalog.bm25_lengths`, ``catalog.bm25``):

- ``bm25_lengths``: per document, its pages with BM25 tokens and their total length (written with the
  document's row, deleted with it; documents indexed before it existed are measured from their stored
  text on first use, :func:`backfill`);
- ``bm25_indexed``: the average the stored vectors were indexed with, and whether some batch used
  another (a corpus's first job embeds with the batch's own average; a job submitted before a re-weight).

A job's embed stage gets the indexed average in its manifest's corpus config (:func:`indexing_config`),
so all of a corpus's vectors share one average. After a job, or a deletion, :func:`maybe_reweight`
recomputes every page's BM25 vector from the catalog's text (no model: a few ms per 100 pages) and
updates only the ``bm25`` vectors when the corpus's average moved more than :data:`DRIFT` from the
indexed one, or some vectors used another. ``mmrag reweight-bm25 CORPUS`` does it on request.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.ingest.ids import point_id
from mmrag.spaces.bm25 import Bm25Space, bm25_length, bm25_text
from mmrag.store.base import VectorStore, VectorValue
from mmrag.types import Document, section_line

log = logging.getLogger(__name__)

DRIFT = 0.2
"""Re-weight when the corpus's average is more than this fraction away from the indexed one."""
BATCH = 512  # pages per store update


@dataclass(frozen=True, slots=True)
class Reweight:
    """What a re-weight did (logged; returned to the CLI)."""

    corpus: str
    pages: int  # points whose bm25 vector was rewritten
    avg_len: float  # the new average
    previous: float | None  # the average the vectors had (None: the batches' own)
    seconds: float


def auto(config: CorpusConfig) -> bool:
    """Whether the corpus takes BM25's average from its own statistics."""
    return config.bm25_avg_len is None and "bm25" in config.spaces


def document_length(doc: Document) -> tuple[int, int]:
    """(pages with BM25 tokens, their total length) of a document, over the text BM25 indexes."""
    lengths = [bm25_length(bm25_text(p.indexed_text, section_line(p.context))) for p in doc.pages]
    return sum(1 for n in lengths if n), sum(lengths)


def backfill(catalog: Catalog, corpus: str) -> int:
    """Record the lengths of documents indexed before the statistics existed; returns how many."""
    missing = catalog.bm25.documents_without_length(corpus)
    for doc_id in missing:
        lengths = [bm25_length(bm25_text(p.text, p.context)) for p in catalog.pages.texts(corpus, [doc_id])]
        catalog.bm25.set_length(corpus, doc_id, sum(1 for n in lengths if n), sum(lengths))
    return len(missing)


def corpus_avg_len(catalog: Catalog, corpus: str) -> float | None:
    """The corpus's mean BM25 length over its pages with tokens (None: no such page yet)."""
    backfill(catalog, corpus)
    totals = catalog.bm25.totals(corpus)
    return totals.length / totals.pages if totals.pages else None


def indexing_config(catalog: Catalog, corpus: str, config: CorpusConfig) -> CorpusConfig:
    """The corpus config a job's stages embed with: the indexed average filled in (None while the corpus
    has none: the embed stage then uses the batch's own average)."""
    if not auto(config):
        return config
    return config.model_copy(update={"bm25_avg_len": catalog.bm25.indexed(corpus).avg_len})


def record_document(catalog: Catalog, corpus: str, doc: Document, embedded_with: CorpusConfig | None) -> None:
    """Before a document's catalog row: its lengths, and whether its vectors used another average
    (``embedded_with``: the manifest's corpus config its batches were embedded with)."""
    if not auto(catalog.corpora.config(corpus)):
        return
    catalog.bm25.set_length(corpus, doc.id, *document_length(doc))
    indexed = catalog.bm25.indexed(corpus)
    used = embedded_with.bm25_avg_len if embedded_with is not None else None
    if not indexed.stale and (indexed.avg_len is None or used != indexed.avg_len):
        catalog.bm25.set_indexed(corpus, indexed.avg_len, stale=True)


def maybe_reweight(catalog: Catalog, store: VectorStore, corpus: str) -> Reweight | None:
    """Re-weight when the stored vectors' average is stale or more than DRIFT from the corpus's."""
    if not catalog.corpora.exists(corpus) or not auto(catalog.corpora.config(corpus)):
        return None
    current = corpus_avg_len(catalog, corpus)
    indexed = catalog.bm25.indexed(corpus)
    if current is None:
        return None
    avg = indexed.avg_len
    if not indexed.stale and avg is not None and abs(current - avg) <= DRIFT * avg:
        return None
    return reweight(catalog, store, corpus, current)


def reweight(catalog: Catalog, store: VectorStore, corpus: str, avg_len: float | None = None) -> Reweight:
    """Rewrite every page's ``bm25`` vector from its stored text with ``avg_len`` (default: the corpus's
    fixed value, or its own average); other vectors and payloads stay untouched."""
    t0 = time.perf_counter()
    config = catalog.corpora.config(corpus)
    if avg_len is None:
        avg_len = config.bm25_avg_len or corpus_avg_len(catalog, corpus) or 1.0
    previous = catalog.bm25.indexed(corpus).avg_len
    space = Bm25Space(avg_len)
    pages = catalog.pages.texts(corpus)
    done = 0
    for i in range(0, len(pages), BATCH):
        part = pages[i:i + BATCH]
        vectors = space.text_vectors([bm25_text(p.text, p.context) for p in part])
        updates: dict[str, dict[str, VectorValue]] = {
            point_id(p.page_id): {"bm25": v} for p, v in zip(part, vectors, strict=True) if v is not None}
        store.update_vectors(corpus, updates)
        done += len(updates)
    if auto(config):
        catalog.bm25.set_indexed(corpus, avg_len, stale=False)
    result = Reweight(corpus, done, avg_len, previous if auto(config) else config.bm25_avg_len,
                      time.perf_counter() - t0)
    log.info("corpus %s: BM25 re-weighted %d pages to average length %.1f (was %s) in %.2fs",
             corpus, result.pages, avg_len, "batch averages" if result.previous is None else
             f"{result.previous:.1f}", result.seconds)
    return result
