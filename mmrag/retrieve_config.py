"""Configuration of search (attached to ``Settings`` as ``settings.retrieve``): its bounds and defaults, and
the page ranking (:class:`RankingConfig`) an evaluation suite may set per variant.

Kept beside :mod:`mmrag.config` (as :mod:`mmrag.vlm_config` is) so that module stays one screen of
settings per stage; the bounds themselves are declared once in :mod:`mmrag.types`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mmrag.types import MAX_PREFETCH_LIMIT, MAX_TOP_K, Fusion

MiB = 1024 * 1024


class RankingConfig(BaseModel):
    """How a search orders pages after its first stage (fusion): the document stage, the page's own prior
    and the learned ranker, in one place (docs/retrieval.md)."""

    document_stage: bool = True
    """Combine each page's match with its document's (corpora with the ``document`` space: title,
    entities, periods, versions of each document, docs/retrieval.md). False: pages alone, as before."""
    document_weight: float = Field(1.0, ge=0, le=100)
    """Weight of the match of the query with each document's evidence text (``w``): a page's score is
    ``page * (1 + w * document + s * fit)``, ``document`` in [0, 2] (DBSF of two spaces). 0 turns the
    document stage off."""
    prior_strength: float = Field(8.0, ge=0, le=100)
    """Weight of each document's fit to what the query names (``s``): its organisation, period (a
    comparative counts 0.3), form, or "the latest" of its series, as the weighted share of those the query
    names (0..1). Bounded: a page's prior is at most ``1 + 2 w + s``."""
    document_candidates: int = Field(1000, ge=1, le=100_000)
    """Pages the document stage scores at least: the best-matching documents, each taken whole (by each
    document vector, ties by document id) until their pages reach this number
    (:mod:`mmrag.retrieve.document_choice`)."""
    title_weight: float = Field(1.0, ge=0, le=100)
    """Weight of a page's title region (its first words) holding the query's terms in the page's own prior
    (:mod:`mmrag.retrieve.page_prior`; pages of documents of 40 pages or more): a candidate's score is
    multiplied by ``1 + t * title + f * figures``."""
    figure_weight: float = Field(4.0, ge=0, le=100)
    """Weight of the share of a page's words that are numbers in the page's own prior (a statement, a table)."""
    page_prior_depth: int = Field(30, ge=0, le=1000)
    """How many of the best candidates the page's own prior reorders (0: off)."""
    ranker: str = "shipped"
    """How a text query's pages are ordered: ``shipped`` (the learned ranker trained from the shared judged
    suites, :mod:`mmrag.retrieve.ranker`), a path to a model trained by ``mmrag rank train``, or ``off`` (the
    first stage's order with the hand-set page prior above). A corpus with its own model (``mmrag rank
    train --corpus``) uses that one. Not applied after a ColPali MaxSim rerank."""
    rank_depth: int = Field(50, ge=1, le=1000)
    """Best pages of the fused first stage that are the ranker's candidates."""
    rank_documents: int = Field(2, ge=0, le=20)
    """Best documents (by their best first-stage page) whose every page is also a candidate."""
    rank_document_pages: int = Field(400, ge=1, le=5000)
    """At most this many pages (the first) of each of those documents."""


class RetrieveConfig(BaseModel):
    """Defaults and bounds of search."""

    default_top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    """Results returned when the request does not say."""
    max_top_k: int = Field(100, ge=1, le=MAX_TOP_K)
    """Largest top_k a request may ask for."""
    prefetch_limit: int = Field(100, ge=1, le=MAX_PREFETCH_LIMIT)
    """Candidates each space contributes before fusion."""
    max_prefetch_limit: int = Field(1000, ge=1, le=MAX_PREFETCH_LIMIT)
    """Largest per-request prefetch_limit."""
    rrf_k: int = Field(60, ge=1)
    """The k of reciprocal rank fusion."""
    fusion: Fusion = "dbsf"
    """How the spaces' candidates are fused: ``dbsf`` (Qdrant's distribution-based score fusion:
    scores normalised by mean +- 3 sd per space, then summed) or ``rrf`` (reciprocal rank). Requests
    with weights use RRF (Qdrant's DBSF takes no weights). On the shipped docling suite DBSF lifted
    hybrid nDCG@5 from 0.908 (RRF k=60) to 0.943, level with BM25 alone (0.941) (docs/benchmarks.md)."""
    max_query_chars: int = Field(2000, ge=1)
    """Longest text query accepted."""
    max_query_image_bytes: int = Field(20 * MiB, ge=1024, le=512 * MiB)
    """Largest query image (bytes; base64 in JSON is 4/3 of this)."""
    max_query_image_pixels: int = Field(16_000_000, ge=10_000, le=64_000_000)
    """Most pixels a query image is decoded to (JPEG decodes at 1/2, 1/4 or 1/8 scale to fit, other formats
    over it are refused): well below the ingest cap, since the image spaces see ~1 megapixel."""
    sentence_queries: Literal["off", "named", "all"] = "off"
    """Long instructions kept from drowning a short question: a query of several sentences
    (:func:`mmrag.retrieve.sentences.query_sentences`) also runs sentences as their own sub-queries through
    the same spaces, fused with the whole query's page ranking by RRF inside the one search. ``named``: the
    sentences that name an organisation, period, form or "the latest" of the corpus's documents (the
    document stage's reading; nothing without it); ``all``: every sentence; ``off``: the whole query only.
    One-sentence queries are unchanged."""
    ranking: RankingConfig = Field(default_factory=RankingConfig)
    """How pages are ordered after the first stage: the document stage's and the page prior's weights and
    the learned ranker (``MMRAG_RETRIEVE__RANKING__*``; a suite sets them under ``retrieve: {ranking: ...}``)."""
