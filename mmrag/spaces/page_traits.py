"""What a page's text says whatever the query: the traits the learned ranker reads of each candidate page
(:mod:`mmrag.retrieve.rank_features`), computed once when the page is written and kept in the catalog.

Computing them from the stored text at search time cost ~0.2 ms a page (the figure count over the whole text,
the statement titles, BM25's tokenizer on the title region): ~25 ms of a search whose ~140 candidates are pages
no earlier search read, which on a large corpus of distinct pages is nearly every search. Ingestion
(:mod:`mmrag.jobs.writer`) packs them (:func:`pack_traits`, a few dozen bytes a page) beside the page; the
ranker unpacks them (:func:`unpack_traits`) and computes only what a page written before lacks. A packed value
carries :data:`TRAITS_VERSION`: one of another version (or damaged) reads as absent, and the page's traits are
computed from its text as before, so changing what a trait means is a version bump, never a wrong feature.

The terms are BM25 token ids of the BM25 space's own tokenizer (:func:`mmrag.spaces.bm25.bm25_term_counts`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mmrag.spaces.bm25 import bm25_term_counts

TRAITS_VERSION = 1  # bump when any trait below is computed differently (stored ones are then recomputed)
HEAD_WORDS = 25  # a page's title region (a statement's, a note's or a section's title)
STATEMENT_HEAD_WORDS = 40  # where a statement's title stands (after "Table of Contents", the company name)

STATEMENT_TITLES: dict[str, re.Pattern[str]] = {
    "income": re.compile(r"statements?\s+of\s+(?:consolidated\s+)?(?:income|operations|earnings)(?!\s+tax)"
                         r"|income\s+statements?|statements?\s+of\s+profit\s+(?:or|and)\s+loss", re.I),
    "comprehensive": re.compile(r"statements?\s+of\s+(?:consolidated\s+)?comprehensive\s+(?:income|loss)", re.I),
    "balance": re.compile(r"balance\s+sheets?|statements?\s+of\s+(?:consolidated\s+)?financial\s+"
                          r"(?:position|condition)", re.I),
    "cash": re.compile(r"statements?\s+of\s+(?:consolidated\s+)?cash\s+flows?|cash\s+flows?\s+statements?", re.I),
    "equity": re.compile(r"statements?\s+of\s+(?:consolidated\s+)?(?:changes\s+in\s+)?(?:\w+['’]?\s+)?"
                         r"(?:equity|deficit)", re.I),
}
"""Primary financial statements by their titles (a page's head; the ranker's questions name them alike)."""
_INCOME_TITLE = re.compile(r"statements?\s+of\s+(?:consolidated\s+)?(?:income|operations|earnings)", re.I)
_NOTE_HEAD = re.compile(r"\bnote\s+\d{1,2}\b|^\s*\d{1,2}\.\s+[A-Z]", re.I)
_NUMBER = re.compile(r"(?<!\S)\(?[$€£¥]?\d[\d,]*(?:\.\d+)?\)?%?(?!\S)")  # a whole word that is a number
_KIND_BITS = {kind: 1 << i for i, kind in enumerate(STATEMENT_TITLES)}
_HEADER = struct.Struct("<BBBIdII")  # version, note head, kinds (bits), words, figures, head terms, section terms


@dataclass(frozen=True, slots=True)
class TextTraits:
    """What the ranker reads of a page's text and section path, whatever the query (:func:`text_traits`)."""

    figures: float  # share of figures among its words
    kinds: frozenset[str]  # primary statements whose titles stand in its head
    note_head: bool  # its title region opens a note
    words: int
    head_terms: frozenset[int]  # BM25 terms of its title region (first HEAD_WORDS words)
    section_terms: frozenset[int]  # BM25 terms of its section path


def figure_share(words: Sequence[str]) -> float:
    """Share of ``words`` that are numbers (amounts, percentages, years), 0 for no words."""
    return len(_NUMBER.findall(" ".join(words))) / len(words) if words else 0.0


def statement_kinds(head: str) -> frozenset[str]:
    """The primary statements whose titles stand in ``head`` (a page's first words)."""
    kinds = {k for k, p in STATEMENT_TITLES.items() if p.search(head)}
    if "comprehensive" in kinds and "income" in kinds and not _INCOME_TITLE.search(head):
        kinds.discard("income")  # "Statements of Comprehensive Income" alone
    return frozenset(kinds)


def text_traits(text: str, section: Sequence[str] = ()) -> TextTraits:
    """The traits of a page of ``text`` under the section path ``section`` (its headings, outermost first)."""
    words = text.split()
    head = " ".join(words[:HEAD_WORDS])
    return TextTraits(
        figures=figure_share(words),
        kinds=statement_kinds(" ".join(words[:STATEMENT_HEAD_WORDS])),
        note_head=bool(_NOTE_HEAD.search(head)),
        words=len(words),
        head_terms=frozenset(bm25_term_counts(head)),
        section_terms=frozenset(bm25_term_counts(" ".join(section))),
    )


def pack_traits(traits: TextTraits) -> bytes:
    """``traits`` as stored (:data:`TRAITS_VERSION` first; the term sets as sorted uint32)."""
    head = np.array(sorted(traits.head_terms), dtype="<u4")
    section = np.array(sorted(traits.section_terms), dtype="<u4")
    kinds = sum(_KIND_BITS[k] for k in traits.kinds)
    return _HEADER.pack(TRAITS_VERSION, int(traits.note_head), kinds, traits.words, traits.figures, len(head),
                        len(section)) + head.tobytes() + section.tobytes()


def unpack_traits(packed: bytes | None) -> TextTraits | None:
    """The traits :func:`pack_traits` stored; None where there are none, or they are of another version or
    damaged (the caller computes them from the page's text)."""
    if not packed or len(packed) < _HEADER.size or packed[0] != TRAITS_VERSION:
        return None
    _, note, kinds, words, figures, n_head, n_section = _HEADER.unpack_from(packed)
    if len(packed) != _HEADER.size + 4 * (n_head + n_section) or kinds >= 1 << len(_KIND_BITS):
        return None
    terms = np.frombuffer(packed, dtype="<u4", offset=_HEADER.size).tolist()
    return TextTraits(figures, frozenset(k for k, bit in _KIND_BITS.items() if kinds & bit), bool(note), words,
                      frozenset(terms[:n_head]), frozenset(terms[n_head:]))


__all__ = ["HEAD_WORDS", "STATEMENT_HEAD_WORDS", "STATEMENT_TITLES", "TRAITS_VERSION", "TextTraits", "figure_share",
           "pack_traits", "statement_kinds", "text_traits", "unpack_traits"]
