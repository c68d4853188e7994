"""A query's sentences, so that long instructions around a short question do not drown it (issue 19).

An analyst's query often wraps one question in a role, a method and a format ("You are a credit analyst
preparing a one-page note. Use Coca-Cola's statement of cash flows for FY2019 and compute ... Show your
working."): one embedding of the whole of it is mostly the wrapping. :func:`query_sentences` cuts such a
query where a sentence ends (``.``, ``?``, ``!`` before a capital or a digit) and where a colon introduces
the question ("show the calculation: what was 3M's FY2018 capex?"); the plan then scores every sentence as
its own sub-query next to the whole query (:mod:`mmrag.retrieve.plan`). Abbreviations (``Inc.``,
``S.A.R.L.``, ``U.S.``, ``vs.``), decimals (``$1.7 billion``) and times (``10:30``) do not end a sentence.
"""

from __future__ import annotations

import re

# The end of a sentence: . ? ! (closing quotes/brackets allowed) then space, then a capital, digit or quote;
# or a colon then space (a clause that introduces the question).
_BREAK = re.compile(r"""(?:(?<=[.?!])|(?<=[.?!]["')\]]))\s+(?=["'(\[]?[A-Z0-9$])|(?<=:)\s+""")
# Words that end in a full stop without ending a sentence (compared lower-case, without the stop).
ABBREVIATIONS = frozenset({
    "inc", "co", "corp", "ltd", "llc", "plc", "no", "nos", "vs", "v", "mr", "mrs", "ms", "dr", "st", "jr", "sr",
    "e.g", "i.e", "etc", "approx", "fig", "p", "pp", "vol", "dept", "est", "jan", "feb", "mar", "apr", "jun",
    "jul", "aug", "sep", "sept", "oct", "nov", "dec",
})
MIN_WORDS = 2  # a fragment shorter than this joins its neighbour ("Be brief." stays a sentence; "Q3." does not)
MAX_SENTENCES = 6  # at most this many sub-queries (the rest stays in the last one)


def _ends_sentence(before: str) -> bool:
    """Does the text ``before`` a candidate break end a sentence (not an abbreviation or an initial)?"""
    end = before.rstrip("\"')]")
    if end[-1:] in (":", "?", "!"):
        return True
    rest = end[:-1].split()
    word = rest[-1].lstrip("\"'([").lower() if rest else ""
    if word in ABBREVIATIONS:
        return False
    return not (len(word) == 1 and word.isalpha()) and not re.fullmatch(r"(?:[a-z]\.)+[a-z]?", word)


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def query_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order (one item, the stripped text, when it is a single sentence)."""
    text = " ".join(text.split())
    parts: list[str] = []
    start = 0
    for m in _BREAK.finditer(text):
        if _ends_sentence(text[:m.start()]):
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    merged: list[str] = []
    for part in filter(None, (p.strip() for p in parts)):
        if merged and (_words(part) < MIN_WORDS or _words(merged[-1]) < MIN_WORDS):
            merged[-1] = f"{merged[-1]} {part}"
        else:
            merged.append(part)
    if len(merged) > MAX_SENTENCES:
        merged[MAX_SENTENCES - 1:] = [" ".join(merged[MAX_SENTENCES - 1:])]
    return merged or [text]
