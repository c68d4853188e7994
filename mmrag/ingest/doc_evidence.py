"""Document evidence: what tells one document from its look-alikes, read from the file name, the
file's own metadata and its first pages' text.

General, not tied to one kind of document: organisations (names with a legal-form suffix, names the
metadata gives), periods and dates (``June 25, 2022``, ``2022-06-25``, ``Q3 2023``, ``fiscal 2023``,
``for the period ended ...``), versions (``v2.1``, ``Version 3``, ``Rev. C``, ``2023 edition``) and
document-type labels (``Form 10-Q``, ``User Guide``, ``Annual Report``). Everything found is kept in
the order of its weight: the period a document is *about* (after "period ended", "as of", the
metadata) comes before dates it merely mentions.

:func:`evidence_text` renders the facts as one short text, the document's own searchable
representation (embedded and BM25-indexed by :mod:`mmrag.spaces.document`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mmrag.ingest.doc_facts import DocumentFacts
from mmrag.ingest.page_context import largest_text

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_MDY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)\b", re.I)
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\s+((?:19|20)\d\d)\b", re.I)
_DATE_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_QUARTER = re.compile(r"\b(?:Q([1-4])\s*(?:FY\s*)?'?((?:19|20)?\d\d)|((?:19|20)\d\d)\s*Q([1-4]))\b", re.I)
_QUARTER_WORDS = re.compile(r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:fiscal\s+)?"
                            r"((?:19|20)\d\d)\b", re.I)
_FISCAL_YEAR = re.compile(r"\b(?:fiscal(?:\s+year)?|FY)\s*'?((?:19|20)\d\d)\b", re.I)
_ABOUT = re.compile(r"\b(?:period|year|quarter|months)\s+(?:ended|ending)\b|\bas\s+of\b|\bdated\b|\beffective\b",
                    re.I)
_VERSION = re.compile(r"\b(?:v(?:ersion)?\.?\s?(\d+(?:\.\d+){0,3}[a-z]?)|rev(?:ision)?\.?\s+([A-Z0-9][\w.]*)|"
                      r"release\s+(\d+(?:\.\d+)*)|((?:19|20)\d\d)\s+edition|(\d+)(?:st|nd|rd|th)\s+edition)\b", re.I)
_LEGAL_FORM = r"Inc|Incorporated|Corp|Corporation|Ltd|Limited|LLC|LLP|PLC|GmbH|AG|S\.A|N\.V|S\.p\.A|Pty|KK"
_ORG_SUFFIX = rf"(?:(?i:{_LEGAL_FORM})|Company|Co|Group|Holdings|Foundation|Institute|University|Association|" \
              r"Agency|Society|COMPANY|GROUP|HOLDINGS|FOUNDATION|INSTITUTE|UNIVERSITY)"
_ORG = re.compile(rf"\b((?:[A-Z][\w&'.-]*|&)(?:[ ,]+(?:[A-Z][\w&'.-]*|&|of|and|the|for)){{0,5}}?,?\s+{_ORG_SUFFIX})\.?"
                  r"(?![\w])")
_STRONG = re.compile(rf"(?i:{_LEGAL_FORM})\.?$")
_LABELS = re.compile(r"\b(Form\s+[0-9]{1,2}-[A-Z]{1,2}|Form\s+[0-9]{1,2}[A-Z]?|annual report|quarterly report|"
                     r"(?:user|reference|installation|administrator|programming|style|quick start)\s+(?:guide|manual)|"
                     r"manual|handbook|specification|datasheet|white\s?paper|release notes|agreement|contract|policy|"
                     r"invoice|statement|proposal|report|thesis|dissertation|prospectus|brochure|tutorial|"
                     r"cookbook|faq)\b", re.I)
_NOT_ENTITIES = {"the company", "company", "the corporation", "corporation", "group", "commission",
                 "securities and exchange commission", "exchange commission"}
MAX_ITEMS = 6


def month_number(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i for i, m in enumerate(MONTHS, start=1) if m.startswith(name[:3]))


def iso_date(year: int, month: int, day: int) -> str | None:
    return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 else None


def find_dates(text: str) -> list[tuple[int, str]]:
    """(offset, ISO date) of every full date in ``text`` (month-day-year, day-month-year, ISO)."""
    found: list[tuple[int, str | None]] = []
    found += [(m.start(), iso_date(int(m[3]), month_number(m[1]), int(m[2]))) for m in _DATE_MDY.finditer(text)]
    found += [(m.start(), iso_date(int(m[3]), month_number(m[2]), int(m[1]))) for m in _DATE_DMY.finditer(text)]
    found += [(m.start(), iso_date(int(m[1]), int(m[2]), int(m[3]))) for m in _DATE_ISO.finditer(text)]
    return sorted((pos, iso) for pos, iso in found if iso)


def find_periods(text: str) -> list[str]:
    """Normalised periods other than full dates: ``2023-Q3``, ``FY2023``, ``2023-06`` (months)."""
    out = []
    for m in _QUARTER.finditer(text):
        q, year = (m[1], m[2]) if m[1] else (m[4], m[3])
        year = year if len(year) == 4 else f"20{year}"
        out.append(f"{year}-Q{q}")
    words = {"first": 1, "second": 2, "third": 3, "fourth": 4}
    out += [f"{m[2]}-Q{words[m[1].lower()]}" for m in _QUARTER_WORDS.finditer(text)]
    out += [f"FY{m[1]}" for m in _FISCAL_YEAR.finditer(text)]
    return out


def _ranked(items: Sequence[str], limit: int = MAX_ITEMS) -> list[str]:
    """Most frequent first, ties in order of first appearance."""
    counts = Counter(items)
    first = {item: i for i, item in reversed(list(enumerate(items)))}
    return sorted(counts, key=lambda item: (-counts[item], first[item]))[:limit]


def document_periods(texts: Sequence[str]) -> list[str]:
    """Periods of the document, the ones it is about first: dates right after "period ended", "as of",
    "dated" (weight 5), quarters / fiscal years / dates of the file name and metadata (weight 6, they
    come first in ``texts``), other dates and periods by frequency."""
    weighted: list[str] = []
    for rank, text in enumerate(texts):
        named = rank == 0  # the file name and the metadata: what people called the document
        for pos, iso in find_dates(text):
            about = _ABOUT.search(text[max(0, pos - 40):pos])
            weighted += [iso] * (6 if named else 5 if about else 1)
        for period in find_periods(text):
            weighted += [period] * (6 if named else 2)
    return _ranked(weighted)


def find_entities(texts: Sequence[str]) -> list[str]:
    """Organisation names (a capitalised name ending in a legal-form or institution word)."""
    names = []
    for text in texts:
        for m in _ORG.finditer(text):
            name = re.sub(r"\s+", " ", m[1]).strip(" ,")
            first = name.split()[0]
            if name.lower() in _NOT_ENTITIES or len(name) > 80 or len(first) < 2 or first.lower() in ("the", "for"):
                continue
            names += [name] * (3 if _STRONG.search(name) else 1)  # a legal form says "organisation" surely
    return _ranked(names, 4)


def find_versions(texts: Sequence[str]) -> list[str]:
    out = []
    for text in texts:
        for m in _VERSION.finditer(text):
            if m[1] and not re.search(r"\d\.\d|^\d+$", m[1]) and not m[0].lower().startswith("v"):
                continue
            value = next(g for g in m.groups() if g)
            out.append(m[0].strip() if not (m[4] or m[5]) else f"{value} edition")
    return _ranked(out, 3)


def find_labels(texts: Sequence[str]) -> list[str]:
    labels = [re.sub(r"\s+", " ", m[1]).strip() for text in texts for m in _LABELS.finditer(text)]
    normal = [label if label.lower().startswith("form") else label.lower() for label in labels]
    return _ranked([re.sub(r"^form", "Form", n, flags=re.I) for n in normal], 3)


def name_tokens(filename: str) -> str:
    """The file name as words (``2023_Q3-AAPL.pdf`` -> ``2023 Q3 AAPL``)."""
    return re.sub(r"[_\-.]+", " ", Path(filename).stem).strip()


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
                   *, base: DocumentFacts | None = None) -> DocumentFacts:
    """``base`` (the facts read from the file's own metadata, :mod:`mmrag.ingest.file_facts`) completed
    with entities, periods, versions and labels found in the file name, the metadata's title / subject /
    keywords and the text of the first pages; a title from the first pages when the file had none."""
    meta = {k: str(v) for k, v in (metadata or {}).items() if v}
    header = " ".join(meta.get(k, "") for k in ("title", "subject", "keywords"))
    stem = name_tokens(filename)
    texts = [f"{stem} {header}", *pages_text]
    facts = base or DocumentFacts()
    if not meaningful_title(facts.title):
        facts.title = meaningful_title(meta.get("title")) or first_heading(" \n".join(pages_text)) or stem
    facts.entities = facts.entities or find_entities(texts)
    facts.periods = facts.periods or document_periods(texts)
    facts.versions = facts.versions or find_versions(texts)
    facts.labels = facts.labels or find_labels([header, *pages_text[:1]])
    facts.date = facts.date or primary_date(facts.periods) or (facts.created or "")[:10] or None
    return facts


def primary_date(periods: Sequence[str]) -> str | None:
    """The date a document is about: its first full date, else the end of its first quarter or fiscal year."""
    for period in periods:
        if re.fullmatch(r"\d{4}-\d\d-\d\d", period):
            return period
    for period in periods:
        if m := re.fullmatch(r"(\d{4})-Q(\d)", period):
            return f"{m[1]}-{3 * int(m[2]):02d}-{(31 if int(m[2]) in (1, 4) else 30):02d}"
        if m := re.fullmatch(r"FY(\d{4})", period):
            return f"{m[1]}-12-31"
    return None


def spoken_period(period: str) -> str:
    """A normalised period as people write it: ``2022-06-25`` -> ``June 25, 2022``; ``2023-Q3`` -> ``Q3 2023``."""
    if m := re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", period):
        return f"{MONTHS[int(m[2]) - 1].capitalize()} {int(m[3])}, {m[1]}"
    if m := re.fullmatch(r"(\d{4})-Q(\d)", period):
        return f"Q{m[2]} {m[1]}"
    if m := re.fullmatch(r"FY(\d{4})", period):
        return f"fiscal {m[1]}"
    return period


def evidence_text(facts: DocumentFacts, filename: str, *, periods: int = 4) -> str:
    """The document's searchable representation: name, title, entities, labels, its main periods, versions."""
    parts = [name_tokens(filename), facts.title or "", ", ".join(facts.entities), ", ".join(facts.labels),
             ", ".join(spoken_period(p) for p in facts.periods[:periods]), ", ".join(facts.versions)]
    seen: list[str] = []
    for part in (p.strip().rstrip(".") for p in parts):
        if part and part not in seen:
            seen.append(part)
    return ". ".join(seen)


def complete_facts(facts: DocumentFacts, filename: str, pdf: bytes | Path | None, *,
                   first_pages: int = 2) -> DocumentFacts:
    """:func:`document_facts` for an upload: ``pdf`` is the PDF its pages render from (the upload
    or its conversion; None for an image), read for its metadata, largest type and first pages' text."""
    if pdf is None:
        return document_facts(filename, [], base=facts)
    import pymupdf

    try:
        doc = pymupdf.open(stream=pdf, filetype="pdf") if isinstance(pdf, bytes) else pymupdf.open(pdf)
    except Exception:  # unreadable: the PDF checks of ingestion report real damage
        return document_facts(filename, [], base=facts)
    with doc:
        texts = [doc[i].get_text() for i in range(min(first_pages, doc.page_count))]
        meta = doc.metadata or {}
        if not meaningful_title(facts.title) and not meaningful_title(meta.get("title")) and doc.page_count:
            facts.title = largest_text(doc[0])
        return document_facts(filename, texts, meta, base=facts)


def series_key(facts: DocumentFacts, filename: str) -> str:
    """What a document is one instance of, its dates, periods and versions left out: its main entity and
    label (``apple inc|form 10-q``), else its title or file name without them (``employee handbook``;
    a label alone is too broad). The documents of one series differ only in when (or which version)."""
    if facts.entities:
        return "|".join(x[0].lower() if x else "" for x in (facts.entities, facts.labels))
    name = facts.title or name_tokens(filename)
    for pattern in (_DATE_MDY, _DATE_DMY, _DATE_ISO, _QUARTER, _QUARTER_WORDS, _FISCAL_YEAR, _VERSION):
        name = pattern.sub(" ", name)
    return " ".join(re.sub(r"[\W\d_]+", " ", name.lower()).split())


def latest_of_series(documents: Iterable[tuple[str, str, DocumentFacts]]) -> list[str]:
    """Ids of the newest dated document of every series with at least two dated documents (the
    ``(id, filename, facts)`` of a corpus): what "the latest report / version" can mean. A series of one
    document has no "latest" to choose; ties on the newest date keep every tied document."""
    series: dict[str, list[tuple[str, str]]] = {}
    for doc_id, filename, facts in documents:
        if facts.date:
            series.setdefault(series_key(facts, filename), []).append((facts.date, doc_id))
    out = []
    for dated in series.values():
        if len(dated) >= 2:
            newest = max(date for date, _ in dated)
            out += sorted(doc_id for date, doc_id in dated if date == newest)
    return sorted(out)


def query_periods(text: str) -> list[str]:
    """Periods a query names, normalised like :func:`document_periods` (dates, quarters, fiscal years)."""
    return list(dict.fromkeys([iso for _, iso in find_dates(text)] + find_periods(text)))


def metadata_evidence(metadata: Mapping[str, Any], filename: str) -> str:
    """The evidence text of a document whose facts are in its metadata's ``doc`` key (set at ingestion)."""
    facts = metadata.get("doc")
    return evidence_text(DocumentFacts.from_dict(facts if isinstance(facts, dict) else None), filename)
