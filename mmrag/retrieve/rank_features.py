"""The learned ranker's features: one function (:func:`feature_matrix`) turns a query and its candidate
pages into the rows the ranker scores, at training time and at search time alike.

A candidate carries what the stages already know of it (:class:`CandidatePage`): its rank in the fused
first stage, each space's own score over the whole candidate set (dense chunk MaxSim, BM25 over the
page), its document's match with the query (the document stage's evidence score, the fit to the
organisation/period/form the query names) and the page's stored text. The features are read from
those, with nothing about any one corpus:

- the spaces: scores and ranks among the candidates (relative to the best candidate, so queries of
  different lengths compare);
- the document: its evidence match, its fit, its rank among the candidates' documents;
- the page: share of figures, whether its title region (first
  :data:`~mmrag.spaces.page_traits.HEAD_WORDS` words) holds the
  query's terms, whether it is a primary financial statement and which, whether it is a note,
  its position in the document, the document's length, the page's length;
- the query: whether it asks for an amount, names a statement (or a line item that lives on one),
  names a note, and how many terms it has; crossed with the page where they meet;
- (the ``context`` set, :data:`CONTEXT_FEATURES`) how much of the question the page holds anywhere (its
  distinct terms, each weighted by its rarity among the candidates) and what its neighbouring pages score
  (the page before and after it in its document, where they are candidates: a figure or table often stands a
  page away from the prose that names it).

Statement titles and line items are the vocabulary of financial reporting in general (US GAAP and
IFRS titles, the common line items), not of any corpus's documents.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from mmrag.errors import InvalidInput
from mmrag.retrieve.references import (
    PageReferences,
    QueryReferences,
    page_references,
    query_references,
    reference_matches,
)
from mmrag.spaces.bm25 import bm25_term_counts
from mmrag.spaces.page_traits import STATEMENT_TITLES, TextTraits, text_traits

_QUERY_STATEMENTS: dict[str, re.Pattern[str]] = {
    **STATEMENT_TITLES,
    "income": re.compile(STATEMENT_TITLES["income"].pattern + r"|\bp\s*&\s*l\b|profit\s+and\s+loss", re.I),
    "cash": re.compile(STATEMENT_TITLES["cash"].pattern + r"|cash\s+flow\s+statement", re.I),
}
_LINE_ITEMS: dict[str, re.Pattern[str]] = {
    "income": re.compile(r"\b(?:revenues?|net\s+sales|cost\s+of\s+(?:goods\s+sold|sales|revenues?)|cogs|gross\s+"
                         r"(?:profit|margin)|operating\s+(?:income|profit|margin|expenses)|net\s+(?:income|earnings"
                         r"|loss)|earnings\s+per\s+share|eps|ebit(?:da)?|selling,?\s+general|sg&a|research\s+and\s+"
                         r"development|interest\s+expense|income\s+tax(?:es)?\s+expense|provision\s+for\s+income)\b",
                         re.I),
    "balance": re.compile(r"\b(?:inventor(?:y|ies)|total\s+assets|total\s+liabilities|current\s+(?:assets|"
                          r"liabilities)|accounts\s+(?:receivable|payable)|receivables|payables|goodwill|"
                          r"(?:long-term|total)\s+debt|shareholders['’]?\s+equity|stockholders['’]?\s+equity|"
                          r"property,?\s+plant\s+and\s+equipment,?\s+net|working\s+capital|"
                          r"cash\s+and\s+cash\s+equivalents)\b", re.I),
    "cash": re.compile(r"\b(?:capital\s+expenditures?|capex|purchases?\s+of\s+property|dividends?\s+paid|"
                       r"(?:paid|pay|payments?\s+of)\s+dividends|depreciation\s+and\s+amortization|cash\s+"
                       r"(?:provided|used|generated|from)\s+(?:by|in|from)?\s*operat\w*|operating\s+cash\s+flow|"
                       r"free\s+cash\s+flow|repurchases?\s+of\s+(?:common\s+)?(?:stock|shares)|buybacks?)\b", re.I),
}
"""Line items and the statement they are read from (a question naming one points to that statement)."""
_NOTE_QUERY = re.compile(r"\b(?:foot)?notes?\b", re.I)
_AMOUNT_QUERY = re.compile(r"\b(?:how\s+much|how\s+many|what\s+(?:was|were|is|are)\s+(?:the\s+)?(?:total|amount|"
                           r"net|value)|amount|total|in\s+(?:usd|\$)\s*(?:millions|billions|thousands)?|ratio|"
                           r"margin|percent(?:age)?|%|usd|\$)", re.I)

FEATURES: tuple[str, ...] = (
    "fused", "fused_rank", "dense", "dense_gap", "dense_rank", "bm25", "bm25_rank",
    "doc_match", "doc_fit", "doc_rank",
    "figures", "title", "is_statement", "statement_kinds", "named_statement", "implied_statement",
    "is_note", "note_asked", "position", "doc_pages", "words", "section",
    "query_amount", "query_statement", "query_terms",
)
"""The base features (the shipped model's): column names of :func:`feature_matrix`, in order (a model file
records its own; one naming a feature this version does not compute is refused)."""
REFERENCE_FEATURES: tuple[str, ...] = (
    "ref_asked", "ref_page", "ref_label", "ref_caption", "ref_mention", "visual_asked", "has_caption", "caption",
)
"""What the question names by number against the page (:mod:`mmrag.retrieve.references`)."""
CONTEXT_FEATURES: tuple[str, ...] = ("coverage", "coverage_gap", "near_fused", "near_bm25", "near_dense_gap")
"""How much of the question the whole page holds, and what its neighbouring pages score (:func:`context_rows`)."""
ALL_FEATURES: tuple[str, ...] = FEATURES + REFERENCE_FEATURES + CONTEXT_FEATURES
FEATURE_SETS: dict[str, tuple[str, ...]] = {"base": FEATURES, "references": FEATURES + REFERENCE_FEATURES,
                                            "context": FEATURES + CONTEXT_FEATURES}
"""The feature sets a ranker is trained on by name (``bench.rank_folds --features``, ``mmrag rank train
--features``); the shipped model and a corpus's own ranker trained over REST use ``base``."""


@dataclass(frozen=True, slots=True)
class PageTraits(TextTraits):
    """What the features read of a page's text and section path, whatever the query: its
    :class:`~mmrag.spaces.page_traits.TextTraits` (stored at ingestion) and, for a model of the reference or
    context features, what :func:`page_traits` reads with ``extended`` (kept per page:
    :class:`mmrag.retrieve.candidates.PageTraitsCache`)."""

    refs: PageReferences | None = None  # its printed labels, captions and mentions by number (None: not read)
    caption_terms: frozenset[int] = frozenset()  # BM25 terms of its caption text
    terms: bytes = b""  # every BM25 term of its text, sorted uint32 (read with ``extended``; 4 bytes a term)

    @classmethod
    def of(cls, base: TextTraits) -> PageTraits:
        """The base traits alone (what a model of the base features reads)."""
        return cls(base.figures, base.kinds, base.note_head, base.words, base.head_terms, base.section_terms)

    @property
    def extended(self) -> bool:
        return self.refs is not None

    def term_ids(self) -> np.ndarray:
        return np.frombuffer(self.terms, dtype=np.uint32)


def page_traits(text: str, section: Sequence[str] = (), extended: bool = False) -> PageTraits:
    """``extended``: also read its labels and captions and keep its whole term set (what
    :data:`REFERENCE_FEATURES` and :data:`CONTEXT_FEATURES` need; a model of the base features does not pay
    for them)."""
    base = text_traits(text, section)
    if not extended:
        return PageTraits.of(base)
    refs = page_references(text)
    return replace(PageTraits.of(base), refs=refs, caption_terms=frozenset(bm25_term_counts(refs.caption_text)),
                   terms=np.unique(np.fromiter(bm25_term_counts(text), dtype=np.uint32)).tobytes())


@dataclass(slots=True)
class CandidatePage:
    """What the stages know of one candidate page."""

    page_id: str
    document_id: str
    page: int  # 1-based page number
    fused_rank: int | None  # 0-based rank in the fused first stage; None: added as a page of a top document
    fused: float = 0.0  # first-stage score (0 when not there)
    scores: dict[str, float] = field(default_factory=dict)  # space -> its own score over the candidate set
    doc_match: float = 0.0  # the document stage's evidence score of its document (0: none)
    doc_fit: float = 0.0  # its document's fit to what the query names (0: none named or not met)
    doc_rank: int = 0  # rank of its document among the candidates' documents (by best first-stage rank)
    doc_pages: int = 1  # pages of its document
    traits: PageTraits = field(default_factory=lambda: page_traits(""))  # what its text says, query aside


@dataclass(frozen=True, slots=True)
class QueryTraits:
    """What the features read of the query once."""

    terms: Mapping[int, int]  # BM25 terms (the BM25 space's tokenizer)
    statements: frozenset[str]  # statements it names
    implied: frozenset[str]  # statements its line items live on
    amount: bool  # asks for an amount, a ratio or a count
    note: bool  # names a note


def query_traits(text: str) -> QueryTraits:
    return QueryTraits(
        terms=bm25_term_counts(text),
        statements=frozenset(k for k, p in _QUERY_STATEMENTS.items() if p.search(text)),
        implied=frozenset(k for k, p in _LINE_ITEMS.items() if p.search(text)),
        amount=bool(_AMOUNT_QUERY.search(text)),
        note=bool(_NOTE_QUERY.search(text)),
    )


def term_share(terms: Mapping[int, int], found: frozenset[int]) -> float:
    """Share of the query's distinct terms among ``found`` (a text's terms)."""
    if not terms:
        return 0.0
    return sum(1 for t in terms if t in found) / len(terms)


def _log_rank(rank: int | None, absent: int) -> float:
    return math.log2(2 + (absent if rank is None else rank))


def _ranks(values: Mapping[str, float]) -> dict[str, int]:
    return {k: i for i, (k, _) in enumerate(sorted(values.items(), key=lambda kv: (-kv[1], kv[0])))}


def feature_columns(names: Sequence[str]) -> list[int]:
    """Where each of ``names`` stands in :data:`ALL_FEATURES` (InvalidInput naming one it does not hold)."""
    unknown = [n for n in names if n not in ALL_FEATURES]
    if unknown:
        raise InvalidInput(f"unknown ranker features {unknown}; this version computes {list(ALL_FEATURES)}")
    return [ALL_FEATURES.index(n) for n in names]


def feature_matrix(query: str, candidates: Sequence[CandidatePage], names: Sequence[str] = FEATURES) -> np.ndarray:
    """(len(candidates), len(names)) float32: one row per candidate, columns ``names`` (of :data:`ALL_FEATURES`)."""
    columns = feature_columns(names)
    traits = query_traits(query)
    base, references = len(FEATURES), len(FEATURES) + len(REFERENCE_FEATURES)
    refs = query_references(query) if any(base <= c < references for c in columns) else None
    context = any(c >= references for c in columns)
    n = len(candidates)
    absent = 2 * max(n, 1)
    space_ranks = {s: _ranks({c.page_id: c.scores[s] for c in candidates if s in c.scores})
                   for s in ("text", "bm25")}
    best_dense = max((c.scores.get("text", 0.0) for c in candidates), default=0.0)
    best_bm25 = max((c.scores.get("bm25", 0.0) for c in candidates), default=0.0)
    best_fused = max((c.fused for c in candidates), default=0.0)
    width = len(ALL_FEATURES) if context else references if refs is not None else base  # the blocks read
    rows = np.zeros((n, width), dtype=np.float32)
    for i, c in enumerate(candidates):
        page = c.traits
        kinds = page.kinds
        dense = c.scores.get("text")
        rows[i, :base] = (
            c.fused / best_fused if best_fused > 0 else 0.0,
            _log_rank(c.fused_rank, absent),
            dense if dense is not None else 0.0,
            best_dense - dense if dense is not None else 1.0,
            _log_rank(space_ranks["text"].get(c.page_id), absent),
            c.scores.get("bm25", 0.0) / best_bm25 if best_bm25 > 0 else 0.0,
            _log_rank(space_ranks["bm25"].get(c.page_id), absent),
            c.doc_match,
            c.doc_fit,
            float(c.doc_rank),
            page.figures,
            term_share(traits.terms, page.head_terms),
            float(bool(kinds)),
            float(len(kinds)),
            float(bool(kinds & traits.statements)),
            float(bool(kinds & traits.implied)),
            float(page.note_head),
            float(traits.note),
            (c.page - 1) / max(c.doc_pages - 1, 1),
            math.log2(max(c.doc_pages, 1)),
            math.log2(1 + page.words),
            term_share(traits.terms, page.section_terms),
            float(traits.amount),
            float(bool(traits.statements or traits.implied)),
            math.log2(1 + len(traits.terms)),
        )
        if refs is not None:
            rows[i, base:references] = reference_row(refs, traits.terms, c)
    if context and n:
        rows[:, references:] = context_rows(traits.terms, candidates, rows[:, FEATURES.index("fused")],
                                            rows[:, FEATURES.index("bm25")], rows[:, FEATURES.index("dense_gap")])
    return rows if columns == list(range(width)) else rows[:, columns]


def term_presence(terms: Mapping[int, int], candidates: Sequence[CandidatePage]) -> np.ndarray:
    """(candidates, distinct query terms) bool: whether each page's text holds each term anywhere."""
    query = np.fromiter(sorted(terms), dtype=np.uint32, count=len(terms))
    out = np.zeros((len(candidates), len(query)), dtype=bool)
    for i, c in enumerate(candidates):
        if not c.traits.extended:
            raise ValueError(f"page {c.page_id}: its traits were read without its terms (page_traits(extended=True))")
        page = c.traits.term_ids()
        if len(page) and len(query):
            at = np.minimum(np.searchsorted(page, query), len(page) - 1)
            out[i] = page[at] == query
    return out


def coverage(present: np.ndarray) -> np.ndarray:
    """(candidates,): the share of the query's terms each page holds, each term weighted by its rarity among
    the candidates (BM25's idf with the candidates as the collection; terms no candidate holds left out)."""
    n = present.shape[0]
    df = present.sum(axis=0)
    idf = np.where(df > 0, np.log1p((n - df + 0.5) / (df + 0.5)), 0.0)
    total = idf.sum()
    return (present @ idf) / total if total > 0 else np.zeros(n)


def context_rows(terms: Mapping[int, int], candidates: Sequence[CandidatePage], fused: np.ndarray,
                 bm25: np.ndarray, dense_gap: np.ndarray) -> np.ndarray:
    """(candidates, len(CONTEXT_FEATURES)): the page's coverage of the query and its gap to the best; the best
    fused and BM25 scores (relative to the best candidate) and the least dense gap of the page before and after it
    in its document (0, 0 and 1 where neither is a candidate)."""
    cover = coverage(term_presence(terms, candidates))
    where = {(c.document_id, c.page): i for i, c in enumerate(candidates)}
    out = np.zeros((len(candidates), len(CONTEXT_FEATURES)), dtype=np.float32)
    out[:, 0] = cover
    out[:, 1] = cover.max() - cover
    out[:, 4] = 1.0
    for i, c in enumerate(candidates):
        near = [j for d in (-1, 1) if (j := where.get((c.document_id, c.page + d))) is not None]
        if near:
            out[i, 2] = fused[near].max()
            out[i, 3] = bm25[near].max()
            out[i, 4] = dense_gap[near].min()
    return out


def reference_row(refs: QueryReferences, terms: Mapping[int, int], c: CandidatePage) -> tuple[float, ...]:
    """The :data:`REFERENCE_FEATURES` of one candidate (its traits read with ``references``)."""
    page = c.traits.refs
    if page is None:
        raise ValueError(f"page {c.page_id}: its traits were read without references (page_traits(extended=True))")
    return (float(refs.any), *reference_matches(refs, page, c.page), float(refs.visual),
            float(bool(page.figure_captions or page.table_captions)), term_share(terms, c.traits.caption_terms))
