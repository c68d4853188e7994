"""Where a page sits in its document: the section headings in force on it.

A page's **section path** (``["Part I", "Item 2. Management's Discussion ...", "Liquidity"]``) comes
from the PDF's outline when it has one: the deepest entries in force at the page (an entry pointing at
the page itself counts). Without an outline it comes from headings found in the text: lines set in
type larger than the page's body text (by 15 %), or marked where the body is not (bold, or a colour of
their own), alone on their line (not a row of table cells), short (at most 20 words), mostly letters,
starting as a heading starts (a capital, a digit, a quote, "eBay", "(e) ": a line starting in lower
case is the end of a wrapped sentence, a bullet is a list), not a signature (``/s/ ...``), not a label
cut short (ending in a comma or "of", "and", ...) or a unit line ("(In millions)"), with text below
them on the page (a sentence set apart at the foot, like "The accompanying notes are an integral part
of this statement.", is not a heading), not a running header or footer (a line in the page's top or
bottom margin that the previous page's margin also had, digits aside, or a "Table of Contents" link
atop it), and, on a statement's page, not one of the bold lines under its title (its row groups).

Levels: larger type is higher; at the same size "Part" / "Book" > "Chapter" > "Item" / "Section" /
"Article" / "Appendix" > a note to the financial statements ("Note 5") or a statement's title ("...
Statements of Cash Flows", "Balance Sheet") > numbered ``1.`` > ``1.2`` > ``1.2.3`` > any other
heading. A heading stays in force on the following pages until a heading of the same or a higher level
replaces it, except the minor ones, which are where long reports went wrong: a run-in heading (ending
in a colon, "2015 Restructuring Actions:") heads only its own page, and another heading no larger than
the body type and of no kind above heads its page and the next (:data:`MINOR_PAGES`). An exhibit
("Exhibit 10.1") starts a new document: the path restarts at it.

Ingestion parses page batches, so a batch may start mid-document. A batch reads on from where an
earlier batch of the file stopped (its :class:`SectionState`, which the job keeps) when that batch ended
at most :data:`LOOKBACK_PAGES` pages before; the path is then the one a reading from the first page gives.
Without one, headings are read from at most :data:`LOOKBACK_PAGES` pages before the batch (a heading in
force from further back is missed; the outline has no such limit).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pymupdf

LOOKBACK_PAGES = 48  # pages before a batch read for the headings in force at its first page
MAX_DEPTH = 5  # deepest section path kept (the outermost levels first)
_LARGER = 1.15  # a heading's type is at least this much larger than the body's (or bold)
_MAX_WORDS = 20
MINOR_PAGES = 1  # pages after its own that a minor heading (body-size, no kind) stays in force
_KINDED = 3  # kind ranks up to a note's or a statement's (see heading_level)
_MARGIN = 0.08  # share of the page height at top and bottom where running headers and footers sit
_KINDS = [
    (re.compile(r"^(?:part|book|volume)\b", re.I), 0),
    (re.compile(r"^chapter\b", re.I), 1),
    (re.compile(r"^(?:item|section|article|appendix|annex|schedule)\s+[\w.]+", re.I), 2),
    (re.compile(r"^note\s+\d+[a-z]?\b", re.I), 3),
]
_STATEMENT = re.compile(  # a financial statement's title (after its company's name, if any), spaces removed
    r"^(?:.{0,60}(?:and|&)subsidiaries)?(?:consolidated|condensed|combined|interim)*"
    r"(?:statements?of[a-z',]{2,60}?|balancesheets?)"
    r"(?:$|[(:,.\u2014-]|years?ended|yearsended|at|asof|for|unaudited|continued|december|june|march|september|\d)")
_CONTENTS = re.compile(r"^(?:table\s+of\s+)?contents$", re.I)  # a link back to the contents, atop each page
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
_EXHIBIT = re.compile(r"^exhibit\s+\d", re.I)
_STARTS = re.compile(  # a capital or a digit after a quote at most (not a bullet), "eBay", or "(e) ..."
    r"^(?:[\"“‘'\[]?[^\W_a-z]|[a-z]+[A-Z]|\([a-z\d]{1,3}\)\s)")
_ENDS_OPEN = re.compile(r"(?:,|\b(?:of|and|or|the|to|for|in|on|by|with|from|at))$", re.I)  # a label that wraps
_UNIT = re.compile(r"^\(.*\)$")  # "(In millions)": a table's unit line
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[^\W\d_]{4,}")  # a heading has a word of four letters or more (not "Yes / No" boxes)


@dataclass(slots=True)
class TextSpan:
    text: str
    size: float  # type size in points, rounded to 0.1
    bold: bool
    color: int = 0  # sRGB


@dataclass(slots=True)
class TextLine:
    text: str
    size: float  # the largest type size of its spans
    bold: bool  # every span is bold
    box: tuple[float, float, float, float]  # page coordinates, points
    color: int | None = None  # its spans' colour, when they share one


@dataclass(frozen=True, slots=True)
class Heading:
    text: str
    level: tuple[float, int]  # smaller is higher: (-type size, kind rank)
    pages: int | None = None  # pages after its own it stays in force (None: until replaced)
    page: int = 0  # the page it is on (set by :func:`section_paths`)


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
            spans += [TextSpan(s["text"].strip(), round(s["size"], 1), b, s["color"])
                      for s, b in zip(own, bold, strict=True)]
            colors = {s["color"] for s in own}
            lines.append(TextLine(" ".join(s["text"].strip() for s in own), max(round(s["size"], 1) for s in own),
                                  all(bold), tuple(line["bbox"]), colors.pop() if len(colors) == 1 else None))
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
    if _STATEMENT.match(_squashed(text)):
        return (-size, 3)
    numbered = _NUMBERED.match(text)
    return (-size, 4 + numbered[1].count(".") if numbered else 9)


def _squashed(text: str) -> str:
    """Lower case without spaces: what kinds are matched on (some files space words apart: "Shee t")."""
    return re.sub(r"\s+", "", text.lower())


def _in_force_for(text: str, rank: int, size: float, body: float) -> int | None:
    """Pages after its own a heading heads (None: until replaced); see the module's note on minor headings."""
    if rank < 9 or size >= _LARGER * body:
        return None
    return 0 if text.rstrip().endswith(":") else MINOR_PAGES


def margin_keys(page: pymupdf.Page) -> frozenset[str]:
    """The lines in the page's top and bottom margins, digits aside: what a running header would repeat."""
    return _margin_keys(text_spans(page)[1], page.rect.height)


def _margin_keys(lines: list[TextLine], height: float) -> frozenset[str]:
    return frozenset(_DIGITS.sub("#", ln.text.lower()) for ln in lines
                     if ln.box[3] <= _MARGIN * height or ln.box[1] >= (1 - _MARGIN) * height)


def _alone(line: TextLine, lines: list[TextLine]) -> bool:
    """No other line shares its band (a heading stands alone; table cells sit side by side)."""
    y0, y1 = line.box[1], line.box[3]
    return not any(o is not line and min(y1, o.box[3]) - max(y0, o.box[1]) > 0.5 * (y1 - y0) for o in lines)


def _running(line: TextLine, height: float, running: frozenset[str]) -> bool:
    """A running header or footer: a margin line the previous page's margin had, or a link to the contents."""
    top, bottom = line.box[3] <= _MARGIN * height, line.box[1] >= (1 - _MARGIN) * height
    repeated = (top or bottom) and _DIGITS.sub("#", line.text.lower()) in running
    return repeated or (top and bool(_CONTENTS.match(line.text)))


def page_headings(page: pymupdf.Page, running: frozenset[str] = frozenset()) -> list[Heading]:
    """The headings of one page, top to bottom (a heading wrapped over two lines is one); ``running``:
    the previous page's :func:`margin_keys` (its running header and footer lines)."""
    spans, lines = text_spans(page)
    return _headings(spans, lines, page.rect.height, running)


def _headings(spans: list[TextSpan], lines: list[TextLine], height: float, running: frozenset[str]) -> list[Heading]:
    body = body_size(spans)
    if body is None:
        return []
    body_chars = [s for s in spans if s.size == body and _lettered(s.text)]
    body_bold = sum(len(s.text) for s in body_chars if s.bold) > 0.5 * sum(len(s.text) for s in body_chars)
    colors: Counter[int] = Counter()
    for span in body_chars:
        colors[span.color] += len(span.text)
    body_color = colors.most_common(1)[0][0] if colors else None
    ordered = sorted(lines, key=lambda ln: (ln.box[1], ln.box[0]))
    last_top = max((ln.box[1] for ln in ordered if _lettered(ln.text)), default=0.0)  # the last line with words
    found: list[TextLine] = []
    for line in ordered:
        letters = sum(ch.isalpha() for ch in line.text)
        marked = (line.bold and not body_bold) or (line.color is not None and line.color != body_color)
        styled = line.size >= _LARGER * body or (marked and line.size >= body)
        if not styled or letters < 0.5 * len(line.text.replace(" ", "")) or not _WORD.search(line.text) \
                or len(line.text.split()) > _MAX_WORDS or not _alone(line, lines) \
                or line.text.startswith("/s/") or _running(line, height, running):
            continue
        prev = found[-1] if found else None
        if prev and prev.size == line.size and prev.bold == line.bold and line.box[1] - prev.box[3] < 0.5 * line.size \
                and heading_level(line.text, line.size)[1] == 9:
            prev.text += " " + " ".join(line.text.split())  # the heading's second line
            prev.box = (prev.box[0], prev.box[1], max(prev.box[2], line.box[2]), line.box[3])
        elif _STARTS.match(line.text):  # (a line starting in lower case ends a wrapped sentence)
            found.append(TextLine(" ".join(line.text.split()), line.size, line.bold, line.box))
    headings: list[Heading] = []
    for ln in found:
        if last_top < ln.box[3] - 1 or _ENDS_OPEN.search(ln.text) or _UNIT.match(ln.text):
            continue  # nothing with words below it (a note at the foot), a label cut short, a unit line
        level = heading_level(ln.text, ln.size)
        minor = _in_force_for(ln.text, level[1], ln.size, body)
        if minor is not None and any(_STATEMENT.match(_squashed(h.text)) for h in headings):
            continue  # on a statement's page its bold lines are the statement's row groups
        headings.append(Heading(ln.text, level, minor))
    return headings


@dataclass(frozen=True, slots=True)
class SectionState:
    """Where a reading of headings stood after ``page``: the path in force and that page's margin lines."""

    page: int
    path: tuple[Heading, ...]
    running: tuple[str, ...]  # :func:`margin_keys` of the page


def push_heading(path: list[Heading], heading: Heading) -> list[Heading]:
    """The path once ``heading`` starts: it replaces headings of its level and below, and a heading of a
    kind (a Part, an Item, a Note, a statement) also those of its kind or below not clearly larger than it
    (the next statement's title set a little smaller than the last one's still replaces it)."""
    (size, rank) = -heading.level[0], heading.level[1]

    def kept(h: Heading) -> bool:
        return h.level < heading.level and not (rank <= _KINDED and h.level[1] >= rank and -h.level[0] < _LARGER * size)
    return [*filter(kept, path), heading]


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


def section_paths(doc: pymupdf.Document, first: int, last: int, carried: SectionState | None = None,
                  ) -> tuple[dict[int, list[str]], SectionState | None]:
    """page number -> section path, for pages ``first..last`` (1-based, inclusive) of ``doc``, and the state
    after ``last`` (None for an outline's paths); ``carried``: an earlier batch's state to read on from."""
    toc = doc.get_toc(simple=True)
    if toc:
        return outline_paths(toc, first, last), None
    out: dict[int, list[str]] = {}
    if carried is not None and first - 1 - LOOKBACK_PAGES <= carried.page < first:
        start, path, running = carried.page + 1, list(carried.path), frozenset(carried.running)
    else:
        start, path, running = max(1, first - LOOKBACK_PAGES), [], frozenset()
    for number in range(start, last + 1):
        page = doc.load_page(number - 1)
        path = [h for h in path if h.pages is None or number <= h.page + h.pages]  # minor headings expire
        spans, lines = text_spans(page)  # (one text extraction a page)
        for heading in _headings(spans, lines, page.rect.height, running):
            if _EXHIBIT.match(heading.text):
                path = []  # an exhibit: a new document starts
            path = push_heading(path, replace(heading, page=number))
        running = _margin_keys(lines, page.rect.height)
        if number >= first:
            out[number] = [h.text for h in path][:MAX_DEPTH]
    return out, SectionState(last, tuple(path), tuple(sorted(running)))
