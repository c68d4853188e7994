"""A page's own prior inside a long document: what its title region says and whether it holds figures.

Inside the right 100-page report the page a question points to is often below pages about the same
item: the MD&A paragraph before the cash flow statement, a note's prose before its table. Two things
a page carries tell them apart, whatever the document's kind:

- its **title region** (the first :data:`~mmrag.spaces.page_traits.HEAD_WORDS` words in reading order: a
  statement's "Consolidated Statement of Cash Flows", a note's "NOTE 10. Long-Term Debt ...", a section's heading,
  also where heading detection finds none): the share of the query's BM25 terms (lower-cased,
  stopwords out, stemmed: the BM25 space's own tokenizer) found there;
- its **figures**: the share of its words that are numbers (``1,234``, ``(56.7)``, ``12%``), high on a
  statement or a note's table, low on prose.

The prior multiplies the fused score of each of the first ``depth`` candidates by
``1 + title_weight * title + figure_weight * min(figures, FIGURE_CAP)``: bounded (at most
``1 + t + f * FIGURE_CAP``; only pages of long reports get the title part), never a filter. Its
weights were chosen on the tuning half of the filings suite and checked on the held-apart half,
docling and sec-10q (docs/benchmarks.md). With ColPali's MaxSim rerank the prior is not applied: the
rerank orders the candidates by MaxSim alone (as it does the document stage's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from mmrag.retrieve.evidence import order_hits
from mmrag.spaces.bm25 import bm25_term_counts
from mmrag.spaces.page_traits import HEAD_WORDS, figure_share
from mmrag.store.base import Hit

FIGURE_CAP = 0.2  # share of numbers above which a page counts the same (a statement page: 0.1–0.3)
LONG_DOCUMENT = 40  # pages from which a document is a long report: its pages' title regions count


@dataclass(frozen=True, slots=True)
class PagePrior:
    """Weights of a page's own prior (both 0: off) and how many of the best candidates it reorders."""

    title_weight: float
    figure_weight: float
    depth: int

    @property
    def on(self) -> bool:
        return self.depth > 0 and (self.title_weight > 0 or self.figure_weight > 0)


def title_match(query_terms: Mapping[int, int], words: Sequence[str]) -> float:
    """Share of the query's distinct BM25 terms found in the first :data:`HEAD_WORDS` of ``words``."""
    if not query_terms or not words:
        return 0.0
    head = bm25_term_counts(" ".join(words[:HEAD_WORDS]))
    return sum(1 for t in query_terms if t in head) / len(query_terms)


def prior_factor(title: float, figures: float, prior: PagePrior) -> float:
    """``1 + t * title + f * min(figures, FIGURE_CAP)``: a page of numbers only (an index, an exhibit list)
    counts no more than a statement."""
    return 1.0 + prior.title_weight * title + prior.figure_weight * min(figures, FIGURE_CAP)


def page_factors(hits: Sequence[Hit], words: Mapping[str, Sequence[str]], query: str,
                 prior: PagePrior, page_counts: Mapping[str, int] | None = None) -> dict[str, float]:
    """page id -> its prior factor, for the first ``prior.depth`` of ``hits`` whose page has words
    (``words``: page id -> the page's words in reading order); {} when the prior is off. The title part
    counts only on pages of a long report (``page_counts``: document id -> pages, at least
    :data:`LONG_DOCUMENT`): in a short document a page's first words are just where its text starts."""
    if not prior.on or not query.strip():
        return {}
    terms = bm25_term_counts(query)
    factors: dict[str, float] = {}
    for hit in hits[:prior.depth]:
        page_id = hit.payload.get("page_id", "")
        page_words = words.get(page_id, ())
        if page_words and page_id not in factors:
            long = (page_counts or {}).get(hit.payload.get("document_id", ""), 0) >= LONG_DOCUMENT
            title = title_match(terms, page_words) if long and prior.title_weight > 0 else 0.0
            factors[page_id] = prior_factor(title, figure_share(page_words), prior)
    return factors


def reprioritise(hits: list[Hit], factors: Mapping[str, float], depth: int) -> list[Hit]:
    """``hits`` (best first) with the first ``depth`` rescored by their page's factor and reordered (ties
    by page id, as :func:`mmrag.retrieve.evidence.order_hits`); a hit whose score is not positive keeps
    it. Factors are at least 1, so no rescored hit falls below the ones after ``depth``."""
    head = [replace(h, score=h.score * factors.get(h.payload.get("page_id", ""), 1.0)) if h.score > 0 else h
            for h in hits[:depth]]
    return order_hits(head, len(head)) + hits[depth:]
