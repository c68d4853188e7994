"""Forms and series: what kind of document it is, its version, and which documents are instances of one
series (the same organisation's 10-Qs, every version of one handbook), so "the latest" can be chosen.

- **Form**: the form its cover names first (``FORM 10-K``), else an earnings release (a release whose
  headline reports or announces results), else the first document-type label it carries
  (``user guide``, ``handbook``, ``annual report``...).
- **Versions**: ``v2.1``, ``Version 3``, ``Rev. C``, ``Release 4.2``, ``2023 edition``.
- **Series**: the main organisation and the form (``apple inc|10-q``), else the title or file name with
  its dates, periods and versions taken out (``employee handbook``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from mmrag.doc_facts import DocumentFacts, StoredFacts
from mmrag.ingest.doc_periods import DATE_DMY, DATE_ISO, DATE_MDY, FISCAL_YEAR, QUARTER, QUARTER_WORDS

_VERSION = re.compile(r"\b(?:v(?:ersion)?\.?\s?(\d+(?:\.\d+){0,3}[a-z]?)|rev(?:ision)?\.?\s+([A-Z0-9][\w.]*)|"
                      r"release\s+(\d+(?:\.\d+)*)|((?:19|20)\d\d)\s+edition|(\d+)(?:st|nd|rd|th)\s+edition)\b", re.I)
_LABELS = re.compile(r"\b(Form\s+[0-9]{1,2}-[A-Z]{1,2}|Form\s+[0-9]{1,2}[A-Z]?|annual report|quarterly report|"
                     r"(?:user|reference|installation|administrator|programming|style|quick start)\s+(?:guide|manual)|"
                     r"manual|handbook|specification|datasheet|white\s?paper|release notes|agreement|contract|policy|"
                     r"invoice|statement|proposal|report|thesis|dissertation|prospectus|brochure|tutorial|"
                     r"cookbook|faq)\b", re.I)
_COVER_FORM = re.compile(r"\bFORM\s+(\d{1,2}-[A-Z]{1,2}|\d{1,2}[A-Z]?)\b", re.I)
_RELEASE = re.compile(r"\b(?:reports?|announces?|posts?|delivers?)\b[^.\n]{0,80}\bresults\b", re.I)
COVER_CHARS = 800  # a cover names its form in its first lines
EARNINGS = "earnings release"

# How questions name each kind of filing (the form itself is always a name of it).
FORM_WORDS: dict[str, str] = {
    "10-K": r"10-?K|annual\s+(?:report|filing)s?",
    "10-Q": r"10-?Q|quarterly\s+(?:report|filing)s?",
    "8-K": r"8-?K|current\s+report",
    EARNINGS: r"earnings(?:\s+(?:release|report|press\s+release|announcement))?|press\s+release|results\s+release",
}


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


def find_form(pages: Sequence[str], labels: Sequence[str]) -> str | None:
    """The document's form: the one its cover names (``10-K``), an earnings release, or its first label."""
    head = " ".join(pages[0].split())[:COVER_CHARS] if pages else ""
    if m := _COVER_FORM.search(head):
        return m[1].upper()
    if _RELEASE.search(head):
        return EARNINGS
    for label in labels:
        return label.removeprefix("Form ").upper() if label.startswith("Form ") else label
    return None


def _ranked(items: Sequence[str], limit: int) -> list[str]:
    counts = Counter(items)
    first = {item: i for i, item in reversed(list(enumerate(items)))}
    return sorted(counts, key=lambda item: (-counts[item], first[item]))[:limit]


def name_tokens(filename: str) -> str:
    """The file name as words (``2023_Q3-AAPL.pdf`` -> ``2023 Q3 AAPL``)."""
    return re.sub(r"[_\-.]+", " ", Path(filename).stem).strip()


def series_key(facts: DocumentFacts, filename: str, entity: str | None = None) -> str:
    """What a document is one instance of, its dates, periods and versions left out: its main entity
    (``entity``: the corpus's choice, else its first) and form (``apple inc|10-q``), else its title or file
    name without them (``employee handbook``; a form alone is too broad)."""
    entity = entity if entity is not None else (facts.entities[0] if facts.entities else "")
    if entity:
        return f"{entity.lower()}|{(facts.form or (facts.labels[0] if facts.labels else '')).lower()}"
    name = facts.title or name_tokens(filename)
    for pattern in (DATE_MDY, DATE_DMY, DATE_ISO, QUARTER, QUARTER_WORDS, FISCAL_YEAR, _VERSION):
        name = pattern.sub(" ", name)
    return " ".join(re.sub(r"[\W\d_]+", " ", name.lower()).split())


def latest_of_series(documents: Iterable[StoredFacts], entity_of: dict[str, str] | None = None) -> list[str]:
    """Ids of the newest dated document of every series with at least two dated documents (the
    documents of a corpus; ``entity_of``: each document's main entity, as the corpus sees it). A series
    of one document has no "latest" to choose; ties on the newest date keep every one."""
    series: dict[str, list[tuple[str, str]]] = {}
    for doc in documents:
        if doc.facts.date:
            entity = None if entity_of is None else entity_of.get(doc.document_id, "")
            key = series_key(doc.facts, doc.filename, entity)
            series.setdefault(key, []).append((doc.facts.date, doc.document_id))
    out = []
    for dated in series.values():
        if len(dated) >= 2:
            newest = max(date for date, _ in dated)
            out += sorted(doc_id for date, doc_id in dated if date == newest)
    return sorted(out)


def named_forms(text: str, forms: Iterable[str]) -> tuple[str, ...]:
    """The forms of ``forms`` (those a corpus has) that a question names: ``10-Q``, "quarterly report",
    "earnings release"; any other form by its own words (``user guide``)."""
    out = []
    for form in forms:
        pattern = FORM_WORDS.get(form, r"\s+".join(re.escape(w) for w in form.split()))
        if re.search(rf"(?<![\w-])(?:{pattern})(?![\w-])", text, re.I):
            out.append(form)
    return tuple(out)
