"""Document evidence: what tells one document from its look-alikes, read from the file name, the
file's own metadata and its first pages' words.

General, not tied to one kind of document, each kind of fact in its own module:

- periods (:mod:`mmrag.ingest.doc_periods`): the reporting period a document states (a cover's "for the
  fiscal year ended ...", a release's "first quarter fiscal 2024 ended ..."), normalised with its fiscal
  calendar, kept apart from the comparatives it also shows; else the dates and periods it mentions;
- organisations (:mod:`mmrag.ingest.doc_orgs`): the registrant or main organisation, its tickers;
- forms, versions and series (:mod:`mmrag.ingest.doc_forms`).

Ingestion reads them at the plan stage (:func:`complete_facts`, from the PDF); :func:`refresh_facts`
re-derives them from a document's stored pages (``mmrag reindex-documents``), with the same words in the
same order, so both give the same facts. :func:`evidence_text` renders them as one short text, the
document's own searchable representation (embedded and BM25-indexed by :mod:`mmrag.spaces.document`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrag.config import IngestConfig
from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.doc_forms import find_form, find_labels, find_versions, name_tokens
from mmrag.ingest.doc_orgs import find_entities, tickers
from mmrag.ingest.doc_periods import document_periods, primary_date, spoken_period
from mmrag.ingest.page_context import largest_text
from mmrag.types import Word

if TYPE_CHECKING:
    import pymupdf

FIRST_PAGES = 6  # pages read: a cover, its contents, the first statements (their year-to-date columns)
OCR_PAGES = 2  # of which OCRed where the text layer is unreadable (the cover or headline; the parse OCRs all)
ENTITY_PAGES = 3  # pages organisations are read from (a cover without the name in text: the next pages)
COLUMN_GAP = 0.035  # a horizontal gap this wide (of the page's width) parts two columns' cells
DERIVED = ("entities", "periods", "versions", "labels", "date", "form", "tickers", "comparatives", "calendar",
           "fiscal_year_end")  # the facts re-derived from the pages (the rest comes from the file's metadata)


def lines_of(words: Sequence[Word]) -> str:
    """A page's words as lines of text (a new line where a word starts left of the last one, or off its
    line): the same lines from a PDF's text layer at ingestion and from the stored words afterwards."""
    lines: list[list[str]] = []
    prev: Word | None = None
    for w in words:
        if prev is None or _new_line(prev, w):
            lines.append([])
        lines[-1].append(w.text)
        prev = w
    return "\n".join(" ".join(line) for line in lines)


def _new_line(prev: Word, word: Word) -> bool:
    height = max(min(prev.bbox[3] - prev.bbox[1], word.bbox[3] - word.bbox[1]), 1e-4)
    off_line = abs((prev.bbox[1] + prev.bbox[3]) / 2 - (word.bbox[1] + word.bbox[3]) / 2) > 0.5 * height
    return off_line or word.bbox[0] < prev.bbox[0] or word.bbox[0] - prev.bbox[2] > COLUMN_GAP


def meaningful_title(title: str | None) -> str | None:
    """A metadata title worth showing: has at least two letters-words (not an id like ``0000320193-23-000006``)."""
    if not title:
        return None
    title = re.sub(r"\s+", " ", title).strip()
    return title if len(re.findall(r"[^\W\d_]{2,}", title)) >= 2 and len(title) <= 200 else None


def first_heading(text: str) -> str | None:
    """The first line of the text that reads like a title (2..14 words, mostly letters)."""
    for line in text.splitlines():
        line = line.strip()
        words = line.split()
        if 2 <= len(words) <= 14 and sum(ch.isalpha() for ch in line) >= 0.6 * len(line):
            return line
    return None


def document_facts(filename: str, pages_text: Sequence[str], metadata: Mapping[str, Any] | None = None,
                   *, base: DocumentFacts | None = None, words: Sequence[Sequence[Word]] = ()) -> DocumentFacts:
    """``base`` (the facts read from the file's own metadata, :mod:`mmrag.ingest.file_metadata`) completed
    with the facts of the file name, the metadata's title / subject / keywords and the first pages' text
    (``pages_text``, one string of lines per page; ``words``: the same pages' words with boxes, for a
    cover's columns). Facts ``base`` already has are kept."""
    meta = {k: str(v) for k, v in (metadata or {}).items() if v}
    facts = base or DocumentFacts()
    facts.subject = facts.subject or " ".join(meta.get(k, "") for k in ("subject", "keywords")).strip() or None
    if not meaningful_title(facts.title):
        facts.title = (meaningful_title(meta.get("title")) or first_heading(" \n".join(pages_text))
                       or name_tokens(filename))
    header = " ".join(x for x in (meaningful_title(meta.get("title")) or facts.title, facts.subject) if x)
    pages = list(pages_text[:FIRST_PAGES])
    facts.entities = facts.entities or find_entities(pages[:ENTITY_PAGES], header)
    facts.tickers = facts.tickers or tickers(pages, words)
    if not facts.periods:
        found = document_periods(Path(filename).stem.replace("_", " "), header, pages)
        facts.periods, facts.comparatives, facts.calendar = found.periods, found.comparatives, found.calendar
        facts.fiscal_year_end = found.fiscal_year_end
    facts.versions = facts.versions or find_versions([f"{name_tokens(filename)} {header}", *pages[:2]])
    facts.labels = facts.labels or find_labels([header, *pages[:1]])
    facts.form = facts.form or find_form(pages, facts.labels)
    facts.date = facts.date or primary_date(facts.periods) or (facts.created or "")[:10] or None
    return facts


def facts_from_words(filename: str, pages: Sequence[Sequence[Word]], metadata: Mapping[str, Any] | None = None,
                     *, base: DocumentFacts | None = None) -> DocumentFacts:
    """:func:`document_facts` of a document's first pages given as their words (with boxes)."""
    pages = list(pages[:FIRST_PAGES])
    return document_facts(filename, [lines_of(p) for p in pages], metadata, base=base, words=pages)


def refresh_facts(stored: DocumentFacts, filename: str, pages: Sequence[Sequence[Word]]) -> DocumentFacts:
    """The facts of an ingested document re-derived from its stored first pages' words by the current
    rules; what came from the file's metadata (title, author, dates, subject) is kept."""
    cleared: dict[str, Any] = {name: [] if isinstance(getattr(stored, name), list) else None for name in DERIVED}
    base = replace(stored, **cleared)
    return facts_from_words(filename, pages, base=base)


def complete_facts(facts: DocumentFacts, filename: str, pdf: pymupdf.Document | None,
                   config: IngestConfig | None = None) -> DocumentFacts:
    """:func:`document_facts` for an upload: ``pdf`` is the open PDF its pages render from (the upload
    or its conversion; None for an image), read for its metadata, largest type and first pages' words
    (OCR's, with ``config``, where a text layer is unreadable: glyphs mapped to control codes)."""
    if pdf is None:
        return document_facts(filename, [], base=facts)
    from mmrag.ingest.parse import layer_or_ocr_words

    config = config or IngestConfig(ocr=False)
    words = [layer_or_ocr_words(pdf, i + 1, config, ocr=i < OCR_PAGES) for i in range(min(FIRST_PAGES, pdf.page_count))]
    meta = pdf.metadata or {}
    if not meaningful_title(facts.title) and not meaningful_title(meta.get("title")) and pdf.page_count:
        facts.title = largest_text(pdf[0])
    return facts_from_words(filename, words, meta, base=facts)


def evidence_text(facts: DocumentFacts, filename: str, *, periods: int = 4) -> str:
    """The document's searchable representation: name, title, entities and tickers, form and labels, its
    reporting periods as people write them (not its comparatives), versions."""
    parts = [name_tokens(filename), facts.title or "", ", ".join([*facts.entities[:1], *facts.tickers]),
             ", ".join(dict.fromkeys([facts.form or "", *facts.labels[:2]])),
             ", ".join(spoken_period(p) for p in facts.periods[:periods]), ", ".join(facts.versions)]
    seen: list[str] = []
    for part in (p.strip().strip(",").strip().rstrip(".") for p in parts):
        if part and part not in seen:
            seen.append(part)
    return ". ".join(seen)


def metadata_evidence(metadata: Mapping[str, Any], filename: str) -> str:
    """The evidence text of a document whose facts are in its metadata's ``doc`` key (set at ingestion)."""
    facts = metadata.get("doc")
    return evidence_text(DocumentFacts.from_dict(facts if isinstance(facts, dict) else None), filename)
