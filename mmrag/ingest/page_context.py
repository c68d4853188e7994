"""Where a page sits in its document: the section headings in force on it.

A page's **section path** (``["Part I", "Item 2. Management's Discussion ...", "Liquidity"]``) comes
from the PDF's outline when it has one: the deepest entries in force at the page (an entry pointing at
the page itself counts). Without an outline it comes from headings found in the text: lines set in
type larger than the page's body text (by 15 %), or bold where the body is not, alone on their line
(not a row of table cells), short (at most 20 words) and mostly letters. A heading stays in force on
the following pages until a heading of the same or a higher level replaces it. Levels: larger type is
higher; at the same size "Part" / "Book" > "Chapter" > "Item" / "Section" / "Article" / "Appendix" >
numbered ``1.`` > ``1.2`` > ``1.2.3`` > any other heading.

Ingestion parses page batches, so a batch may start mid-document: headings are read from at most
:data:`LOOKBACK_PAGES` pages before the batch (a batch starting later than that misses a heading in
force from further back; the outline has no such limit).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pymupdf

LOOKBACK_PAGES = 48  # pages before a batch read for the headings in force at its first page
MAX_DEPTH = 5  # deepest section path kept (the outermost levels first)
_LARGER = 1.15  # a heading's type is at least this much larger than the body's (or bold)
_MAX_WORDS = 20
_KINDS = [
    (re.compile(r"^(?:part|book|volume)\b", re.I), 0),
    (re.compile(r"^chapter\b", re.I), 1),
    (re.compile(r"^(?:item|section|article|appendix|annex|schedule)\s+[\w.]+", re.I), 2),
]
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_WORD = re.compile(r"[^\W\d_]{4,}")  # a heading has a word of four letters or more (not "Yes / No" boxes)


@dataclass(slots=True)
class TextSpan:
    text: str
    size: float  # type size in points, rounded to 0.1
    bold: bool


@dataclass(slots=True)
class TextLine:
    text: str
    size: float  # the largest type size of its spans
    bold: bool  # every span is bold
    box: tuple[float, float, float, float]  # page coordinates, points


@dataclass(frozen=True, slots=True)
class Heading:
    text: str
    level: tuple[float, int]  # smaller is higher: (-type size, kind rank)


def text_spans(page: pymupdf.Page) -> tuple[list[TextSpan], list[TextLine]]:
    """The page's non-blank spans and lines (one ``get_text("dict")``)."""
    spans: list[TextSpan] = []
    lines: list[TextLine] = []
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            own = [s for s in line["spans"] if s["text"].strip()]
            if not own:
                continue
            bold = [bool(s["flags"] & 16) or "bold" in s["font"].lower() for s in own]
            spans += [TextSpan(s["text"].strip(), round(s["size"], 1), b) for s, b in zip(own, bold, strict=True)]
            lines.append(TextLine(" ".join(s["text"].strip() for s in own), max(round(s["size"], 1) for s in own),
                                  all(bold), tuple(line["bbox"])))
    return spans, lines


def _lettered(text: str) -> bool:
    return sum(ch.isalpha() for ch in text) >= 3


def body_size(spans: list[TextSpan]) -> float | None:
    """The type size most characters of the page are set in."""
    chars: Counter[float] = Counter()
    for span in spans:
        if _lettered(span.text):
            chars[span.size] += len(span.text)
    return chars.most_common(1)[0][0] if chars else None


def largest_text(page: Any) -> str | None:
    """The words set in the largest type on a PyMuPDF page (a title, usually), at most 20 words."""
    spans = [s for s in text_spans(page)[0] if _lettered(s.text)]
    body = body_size(spans)
    if body is None:
        return None
    top = max(s.size for s in spans)
    if top < _LARGER * body:
        return None  # no type larger than the body text
    words = " ".join(s.text for s in spans if s.size == top).split()
    return " ".join(words[:20]) if len(words) >= 2 or len(words[0]) >= 4 else None


def heading_level(text: str, size: float) -> tuple[float, int]:
    for pattern, rank in _KINDS:
        if pattern.match(text):
            return (-size, rank)
    numbered = _NUMBERED.match(text)
    return (-size, 3 + numbered[1].count(".") if numbered else 9)


def _alone(line: TextLine, lines: list[TextLine]) -> bool:
    """No other line shares its band (a heading stands alone; table cells sit side by side)."""
    y0, y1 = line.box[1], line.box[3]
    return not any(o is not line and min(y1, o.box[3]) - max(y0, o.box[1]) > 0.5 * (y1 - y0) for o in lines)


def page_headings(page: pymupdf.Page) -> list[Heading]:
    """The headings of one page, top to bottom (a heading wrapped over two lines is one)."""
    spans, lines = text_spans(page)
    body = body_size(spans)
    if body is None:
        return []
    body_chars = [s for s in spans if s.size == body and _lettered(s.text)]
    body_bold = sum(len(s.text) for s in body_chars if s.bold) > 0.5 * sum(len(s.text) for s in body_chars)
    found: list[TextLine] = []
    for line in sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])):
        letters = sum(ch.isalpha() for ch in line.text)
        styled = line.size >= _LARGER * body or (line.bold and not body_bold and line.size >= body)
        if not styled or letters < 0.5 * len(line.text.replace(" ", "")) or not _WORD.search(line.text) \
                or len(line.text.split()) > _MAX_WORDS or not _alone(line, lines):
            continue
        prev = found[-1] if found else None
        if prev and prev.size == line.size and prev.bold == line.bold and line.box[1] - prev.box[3] < 0.5 * line.size \
                and heading_level(line.text, line.size)[1] == 9:
            prev.text += " " + " ".join(line.text.split())  # the heading's second line
            prev.box = (prev.box[0], prev.box[1], max(prev.box[2], line.box[2]), line.box[3])
        else:
            found.append(TextLine(" ".join(line.text.split()), line.size, line.bold, line.box))
    return [Heading(ln.text, heading_level(ln.text, ln.size)) for ln in found]


def push_heading(path: list[Heading], heading: Heading) -> list[Heading]:
    """The path once ``heading`` starts: it replaces headings of its level and below."""
    kept = [h for h in path if h.level < heading.level]
    return [*kept, heading]


def outline_paths(toc: list[list[Any]], first: int, last: int) -> dict[int, list[str]]:
    """page -> its section path from an outline (``get_toc()`` rows: level, title, page)."""
    entries = sorted(((int(page), i, int(level), " ".join(str(title).split()))
                      for i, (level, title, page, *_) in enumerate(toc) if int(page) >= 1 and str(title).strip()))
    out: dict[int, list[str]] = {}
    stack: list[str] = []
    j = 0
    for number in range(1, last + 1):
        while j < len(entries) and entries[j][0] <= number:
            _, _, level, title = entries[j]
            stack = [*stack[:level - 1], title]
            j += 1
        if number >= first:
            out[number] = stack[:MAX_DEPTH]
    return out


def section_paths(doc: pymupdf.Document, first: int, last: int) -> dict[int, list[str]]:
    """page number -> section path, for pages ``first..last`` (1-based, inclusive) of ``doc``."""
    toc = doc.get_toc(simple=True)
    if toc:
        return outline_paths(toc, first, last)
    out: dict[int, list[str]] = {}
    path: list[Heading] = []
    for number in range(max(1, first - LOOKBACK_PAGES), last + 1):
        for heading in page_headings(doc.load_page(number - 1)):
            path = push_heading(path, heading)
        if number >= first:
            out[number] = [h.text for h in path][:MAX_DEPTH]
    return out
