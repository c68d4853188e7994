"""References in a question to a page, slide, figure or table by its number, and what a page says of its
own numbers: the learned ranker's reference features (:data:`mmrag.retrieve.rank_features.REFERENCE_FEATURES`).

A question may point at its evidence by number ("on page 14", "slide 5", "pp. 3-4", "Figure 2.1", "Table 3").
A page answers to such a number in three ways, read from its stored text (whitespace-joined words in
reading order, so no line breaks are relied on):

- its **number** in the file (1-based; a slide deck's slide is its page);
- its **printed label**: a bare number (``12``, ``- 12 -``, ``12 |``) as its first or last word, or ``Page 12`` /
  ``Page 12 of 40`` among its first or last :data:`EDGE_WORDS` words, where headers and footers stand (a
  report's page 48 is often the file's page 52);
- its **captions**: a figure or table word and a number followed by a caption's delimiter (``Figure 3:``,
  ``Table 2.`` , ``Fig. 4 |``) or by a capitalised word (``Table 2 Revenue by segment``), as opposed to a
  mention in prose (``as shown in Figure 3, ...``), which counts on its own and for less.

The figure and table words are a small vocabulary of the common European languages' abbreviations and
words, and the CJK ``图``/``表``; numbers are the reference itself (``2.1`` and ``2-1`` are the same; a letter after
it, ``3a``, is not part of it). Ordinal references ("the second chart") are not read. The words after a
caption (its first :data:`CAPTION_WORDS`) are the page's caption text: a question's terms found there count
as a title's do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EDGE_WORDS = 4  # words at each end of a page's text where a printed page label stands
CAPTION_WORDS = 12  # words of a caption after its label
MAX_LABEL = 1500  # larger bare numbers at a page's edge are years or amounts, not page labels
MAX_RANGE = 10  # "pages 3-40" names no page in particular beyond this many

_FIGURE = r"fig(?:ure)?s?\.?|figur[ae]s?|abbildung(?:en)?|abb\.|charts?|graphs?|exhibits?|diagrams?|grafi[ck]o?s?"
_TABLE = r"tables?|tab\.|tabl[ae]s?|tabellen?|tableaux?|tabell[ae]|tablas?"
_PAGE = r"pages?|pp?\.|pgs?\.?|seiten?|p[aá]ginas?|pagina"
_SLIDE = r"slides?|folien?|diapositivas?"
_NUMBER = r"(\d{1,3}(?:[.\-–]\d{1,3})?)(?!\d|[.\-–]\d)"
_NUMBER_LIST = r"(\d{1,4})(?:\s*(?:-|–|—|to|and|&|,|/|bis|à|a|y|und|et)\s*(\d{1,4}))?"

_QUERY_PAGES = re.compile(rf"(?<!\w)(?:{_PAGE})\s*(?:no\.?|number|#)?\s*{_NUMBER_LIST}(?!\d)", re.I)
_QUERY_SLIDES = re.compile(rf"(?<!\w)(?:{_SLIDE})\s*(?:no\.?|number|#)?\s*{_NUMBER_LIST}(?!\d)", re.I)
_CJK_PAGE = re.compile(r"第\s*(\d{1,4})\s*[页頁]")
_LABELLED = {
    "figure": re.compile(rf"(?:(?<!\w)(?:{_FIGURE})|图|圖)\s*(?:no\.?|#)?\s*{_NUMBER}", re.I),
    "table": re.compile(rf"(?:(?<!\w)(?:{_TABLE})|表)\s*(?:no\.?|#)?\s*{_NUMBER}", re.I),
}
"""A figure or table word and its number (group 1), anywhere: a question's reference or a page's mention."""
_CAPTION_END = re.compile(r"\s*(?:[:.|–—]|-(?!\d))|\s+[A-Z]")
"""What follows a caption's number (its delimiter or its title's first capital), not a mention's comma or verb."""
_VISUAL_QUERY = re.compile(rf"(?<!\w)(?:{_FIGURE}|{_TABLE}|{_SLIDE}|images?|pictures?|photos?|photographs?|plots?|"
                           r"maps?|illustrations?|logos?|icons?|screenshots?|infographics?)(?!\w)|图|表", re.I)
_PAGE_LABEL = re.compile(r"(?<!\w)(?:page|seite|p[aá]gina|pg\.?|p\.)\s*(\d{1,4})(?:\s*(?:of|/|de|von|sur)\s*\d{1,4})?",
                         re.I)
_DECOR = r"[-–—|•·()\[\]]"
_FIRST_LABEL = re.compile(rf"^(?:{_DECOR}\s*)*(\d{{1,4}})(?:\s*{_DECOR})*(?:\s|$)")
_LAST_LABEL = re.compile(rf"(?:^|\s)(?:{_DECOR}\s*)*(\d{{1,4}})(?:\s*{_DECOR})*$")


@dataclass(frozen=True, slots=True)
class QueryReferences:
    """What a question names by number (:func:`query_references`)."""

    pages: frozenset[int]  # page and slide numbers ("page 14", "slides 3-5")
    figures: frozenset[str]  # figure numbers ("Figure 2.1" -> "2.1")
    tables: frozenset[str]  # table numbers
    visual: bool  # names a figure, chart, table, slide, image... numbered or not

    @property
    def any(self) -> bool:
        return bool(self.pages or self.figures or self.tables)


@dataclass(frozen=True, slots=True)
class PageReferences:
    """What a page says of its own numbers (:func:`page_references`)."""

    labels: frozenset[int] = frozenset()  # printed page labels at its edges
    figure_captions: frozenset[str] = frozenset()  # numbers of the figures captioned on it
    table_captions: frozenset[str] = frozenset()
    figure_mentions: frozenset[str] = frozenset()  # numbers of the figures named anywhere on it
    table_mentions: frozenset[str] = frozenset()
    caption_text: str = ""  # the first CAPTION_WORDS words after each caption label


def reference_number(text: str) -> str:
    """A figure's or table's number as a key: ``2-1`` and ``2.1`` alike, a leading zero dropped."""
    parts = re.split(r"[.\-–]", text)
    return ".".join(str(int(p)) for p in parts if p)


def _numbers(pattern: re.Pattern[str], text: str) -> set[int]:
    out: set[int] = set()
    for m in pattern.finditer(text):
        first = int(m.group(1))
        last = int(m.group(2)) if m.lastindex and m.lastindex >= 2 and m.group(2) else first
        if first <= last <= first + MAX_RANGE:
            out.update(range(first, last + 1))
        else:
            out.update({first, last})
    return out


def query_references(text: str) -> QueryReferences:
    """The pages, slides, figures and tables ``text`` names by number."""
    pages = _numbers(_QUERY_PAGES, text) | _numbers(_QUERY_SLIDES, text)
    pages |= {int(m.group(1)) for m in _CJK_PAGE.finditer(text)}
    return QueryReferences(
        pages=frozenset(p for p in pages if p > 0),
        figures=frozenset(reference_number(m.group(1)) for m in _LABELLED["figure"].finditer(text)),
        tables=frozenset(reference_number(m.group(1)) for m in _LABELLED["table"].finditer(text)),
        visual=bool(_VISUAL_QUERY.search(text)),
    )


def page_labels(words: list[str]) -> frozenset[int]:
    """Printed page labels of a page's ``words``: ``Page N`` among the first and last :data:`EDGE_WORDS`, a bare
    number as the first or last word."""
    edges = [" ".join(words[:EDGE_WORDS]), " ".join(words[-EDGE_WORDS:])]
    found = {int(m.group(1)) for edge in edges for m in _PAGE_LABEL.finditer(edge)}
    for pattern, edge in ((_FIRST_LABEL, edges[0]), (_LAST_LABEL, edges[1])):
        if m := pattern.search(edge):
            found.add(int(m.group(1)))
    return frozenset(n for n in found if 0 < n <= MAX_LABEL)


def page_references(text: str) -> PageReferences:
    """The labels, captions and mentions of a page's stored ``text``."""
    words = text.split()
    if not words:
        return PageReferences()
    captions: dict[str, set[str]] = {"figure": set(), "table": set()}
    mentions: dict[str, set[str]] = {"figure": set(), "table": set()}
    caption_words: list[str] = []
    for kind, pattern in _LABELLED.items():
        for m in pattern.finditer(text):
            number = reference_number(m.group(1))
            mentions[kind].add(number)
            if _CAPTION_END.match(text, m.end()):
                captions[kind].add(number)
                caption_words += text[m.end():].split()[:CAPTION_WORDS]
    return PageReferences(
        labels=page_labels(words),
        figure_captions=frozenset(captions["figure"]), table_captions=frozenset(captions["table"]),
        figure_mentions=frozenset(mentions["figure"]), table_mentions=frozenset(mentions["table"]),
        caption_text=" ".join(caption_words),
    )


def reference_matches(query: QueryReferences, page: PageReferences, number: int) -> tuple[float, float, float, float]:
    """(the question's page number is this page's ``number``, is one of its printed labels, its figure or
    table number is captioned on it, is named anywhere on it), each 0 or 1."""
    return (
        float(number in query.pages),
        float(bool(query.pages & page.labels)),
        float(bool(query.figures & page.figure_captions or query.tables & page.table_captions)),
        float(bool(query.figures & page.figure_mentions or query.tables & page.table_mentions)),
    )
