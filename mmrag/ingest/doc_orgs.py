"""Organisations: who a document is by or about, and the tickers it is traded under.

- The **registrant** where the document has a cover that names it: the line above a caption "(exact
  name of registrant as specified in its charter)", or a release's ``Salesforce (NYSE: CRM)``.
- Else the document's **main organisation**: the first organisation its cover (first page) names, then
  the most frequent of its first pages. Organisations are capitalised names ending in a legal form or an
  institution word (``Inc``, ``Corp``, ``Company``, ``GmbH``, ``University``...), written as companies
  write themselves: starting with a digit (``3M COMPANY``), with "The" (``The Coca-Cola Company``), in
  lower case before a legal form (``eBay Inc.``, ``salesforce.com, inc.``), with apostrophes
  (``McDONALD'S CORPORATION``).
- **Tickers** from a cover's "Trading Symbol(s)" column or an ``(NYSE: MMM)`` after the name.

Which names are boilerplate rather than identity (the exchange every filing lists) is a corpus-level
question: :mod:`mmrag.retrieve.document_prior` drops names seen in most documents that are rarely a main one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from mmrag.types import Word

_LEGAL_FORM = r"Inc|Incorporated(?!\s+(?:by|in|under|herein|into|as)\b)|Corp|Corporation|Ltd|Limited|LLC|LLP|L\.P|" \
              r"PLC|GmbH|AG|S\.A|N\.V|S\.p\.A|SE|Pty|KK|Co"
_ORG_WORD = r"Company|Group|Holdings|Foundation|Institute|University|Association|Agency|Society|Bank|Trust"
_TOKEN = r"(?:[A-Z][\w&'’.-]*|[0-9]+[A-Za-z][\w&'’.-]*|[a-z]+[A-Z][\w'’.-]*|[a-z][\w-]*\.(?:com|net|org|io))"
_JOIN = r"(?:of|and|the|for|&|de)"
ORG = re.compile(rf"(?<![\w.-])((?:(?:The|THE)\s+)?{_TOKEN}(?:[ \t,]+(?:{_TOKEN}|{_JOIN})){{0,5}}?,?[ \t]+"
                 rf"(?:(?i:{_LEGAL_FORM})|(?i:{_ORG_WORD})))\.?(?![\w&'’-])")
_STRONG = re.compile(rf"(?i:{_LEGAL_FORM}|Company)\.?$")
_CAPTION = re.compile(r"exact\s+name\s+of\s+(?:the\s+)?registrant", re.I)
_LISTED = re.compile(r"(?<![\w.])([A-Z][\w.&'’ -]{1,60}?)\s*\((?:NYSE|NASDAQ|Nasdaq|NYSE\s+American|AMEX|TSX|LSE|"
                     r"Euronext|SIX|XETRA|OTC)\s*:\s*([A-Z][A-Z.]{0,5})\)")
_TICKER = re.compile(r"^[A-Z]{1,5}(?:\.[A-Z])?$")
_NOT_NAME = re.compile(r"commission|file\s+n|\(mark|^\W*$|^[\d\W]+$|transition|quarterly|annual|report|form\s+\d", re.I)
_GENERIC = {"the company", "company", "the corporation", "corporation", "group", "commission", "the registrant",
            "securities and exchange commission", "exchange commission", "the bank", "bank", "the trust"}
_OPENERS = {"at", "on", "as", "in", "our", "its", "form", "by", "if", "to", "from", "with", "under", "for", "and", "of",
            "company", "group", "availability", "emerging"}
_DATED = re.compile(r"^.*\b(?:19|20)\d\d\b,?\s*")  # "On January 4, 2023, Salesforce, Inc" -> "Salesforce, Inc"
MAX_ENTITIES = 4


def clean_name(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip(" ,.;:")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def registrant(pages: Sequence[str]) -> str | None:
    """The name a cover gives as the registrant's (the line above its "exact name of registrant"
    caption), or a release's listed company (``Salesforce (NYSE: CRM)``); None without either."""
    for text in pages[:2]:
        lines = _lines(text)
        for i, line in enumerate(lines):
            if not _CAPTION.search(line):
                continue
            before = _CAPTION.split(line)[0].strip(" (")
            candidates = [before] if len(before) > 2 else lines[max(0, i - 2):i][::-1]
            for candidate in candidates[:1]:
                if not _NOT_NAME.search(candidate) and sum(ch.isalpha() for ch in candidate) >= 2 and \
                        len(candidate.split()) <= 10:
                    return clean_name(candidate)
            break
    for text in pages[:1]:
        if m := _LISTED.search(" ".join(text.split())):
            return clean_name(m[1])
    return None


def tickers(pages: Sequence[str], words: Sequence[Sequence[Word]] = ()) -> list[str]:
    """The trading symbols a cover lists in its "Trading Symbol(s)" column (``words``: the first pages'
    words with their boxes; the first symbol, the common stock's, first), or a release's ``(NYSE: CRM)``."""
    found: list[str] = []
    for page in words[:2]:
        header = next((i for i, w in enumerate(page) if w.text.lower() == "trading" and i + 1 < len(page)
                       and page[i + 1].text.lower().startswith("symbol")), None)
        if header is None:
            continue
        x0, x1 = page[header].bbox[0] - 0.03, page[header + 1].bbox[2] + 0.03
        top = page[header + 1].bbox[3]
        for w in page[header + 2:]:
            centre = (w.bbox[0] + w.bbox[2]) / 2
            if w.bbox[1] > top + 0.35:
                break
            if x0 <= centre <= x1 and w.bbox[1] >= top and _TICKER.match(w.text) and w.text not in found:
                found.append(w.text)
        if found:
            break
    if not found:
        for text in pages[:2]:
            found += [m[2] for m in _LISTED.finditer(" ".join(text.split())) if m[2] not in found]
    return found[:1]


def organisations(text: str) -> list[str]:
    """Organisation names in ``text`` in order of appearance (line by line: a name does not wrap). Not a
    generic "the Company" / "Our Company" / "... of the Company", not a sentence's opening words or date
    before the name, not a lower-case legal form after a capitalised word ("a Georgia corporation")."""
    out = []
    for line in text.splitlines():
        for m in ORG.finditer(line):
            name = clean_name(_DATED.sub("", m[1]))
            words = name.split()
            if len(words) < 2 or name.lower() in _GENERIC or len(name) > 80 or words[0].lower() in _OPENERS:
                continue
            if words[-2].lower() in ("the", "of", "our") or re.fullmatch(r"(?:19|20)\d\d", words[0]):
                continue
            if words[-1][:1].islower() and not words[0][:1].islower():
                continue
            out.append(name)
    return out


def find_entities(pages: Sequence[str], header: str = "") -> list[str]:
    """The document's organisations, its identity first: the registrant (:func:`registrant`), then the
    first organisation its first page names, then by weight (legal forms count 3) in the metadata
    (``header``: title, subject) and the first pages."""
    weighted: list[str] = []
    for rank, text in enumerate([header, *pages]):
        for name in organisations(text):
            weighted += [name] * ((3 if _STRONG.search(name) else 1) * (2 if rank == 0 else 1))
    counts = Counter(weighted)
    order = {name: i for i, name in reversed(list(enumerate(weighted)))}
    ranked = sorted(counts, key=lambda n: (-counts[n], order[n]))
    cover = organisations(pages[0]) if pages else []
    head = [n for n in (registrant(pages), cover[0] if cover else None) if n]
    out: list[str] = []
    for name in [*head, *ranked]:
        if _letters(name) not in {_letters(o) for o in out}:
            out.append(name)
    return out[:MAX_ENTITIES]


def _letters(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", re.sub(r"^the\s+|(?:[\s,]+(?:inc|corp|corporation|company|co|ltd|llc|plc)\.?)+$",
                                          "", name.lower()))
