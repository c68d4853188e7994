"""Tables found from the text layer alone: lines of words, phrases, and numeric columns that align.

A statement table in a born-digital filing is text set in columns: a row label at the left, values
right-aligned under column labels, often with no ruled grid at all. This module finds such tables in
the page's words in a few milliseconds (pure Python over the word boxes, no image, no model):

1. **lines**: words whose vertical centres are close form a visual line;
2. **phrases**: words of a line separated by less than about half a line height stay together
   (a row label, a column label, one value); ``$`` joins the value after it, ``%`` / ``)`` the one
   before;
3. **data lines**: lines with two values or more, or a label followed by a value (a value is a
   phrase of digits, separators, currency and percent signs, or a lone dash for nil);
4. **blocks**: data lines close to each other, with at most a few short lines between them (section
   labels such as "Operating expenses:"); a block is a table when two of its data lines or more
   have values in one shared column (their boxes overlap horizontally: right-aligned numbers do);
5. **columns**: the values' columns, plus the text columns (row labels) found the same way;
6. **column labels**: the short lines just above the table (spanning labels such as "Three Months
   Ended" belong to every column under them; year lines such as "2022 2021" are labels too).

Coordinates are the page's unrotated points (PyMuPDF ``get_text("words")``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Box = tuple[float, float, float, float]
RawWord = tuple[float, float, float, float, str]  # x0, y0, x1, y1, text

_VALUE = re.compile(r"^[$€£¥(]*[-–—]?[$€£¥]?\(?\d[\d,.]*\)?%?\)?$|^[-–—]+$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_JOIN_NEXT = {"$", "€", "£", "¥", "(", "$(", "($"}
_JOIN_PREV = {"%", ")", "%)", ")%"}
_LINE_TOL = 0.3  # words whose centres differ by less than this share of their height share a line
_PHRASE_GAP = 0.55  # a gap wider than this share of the line height (and _MIN_GAP_PT) ends a phrase
_MIN_GAP_PT = 4.0
_MAX_BETWEEN = 4  # non-data lines allowed between two data lines of one table
_SHORT_WORDS = 12  # a line between data lines (a section label) has at most this many words
_LINE_GAP = 3.0  # line heights between consecutive lines of one table
_HEADER_LINES = 6  # lines above a table searched for its column labels
_LABEL_WORDS = 8  # a longer phrase above a table is a note, not a column label
MIN_VALUES = 4  # a page with fewer value-like words has no numeric table (the cheap pre-test)


@dataclass(slots=True)
class Phrase:
    text: str
    box: Box
    words: list[int]  # indices into the page's raw words

    @property
    def is_value(self) -> bool:
        return bool(_VALUE.match(self.text.replace(" ", "")))


@dataclass(slots=True)
class Line:
    phrases: list[Phrase]
    y0: float
    y1: float

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    def values(self) -> list[Phrase]:
        return [p for p in self.phrases if p.is_value]

    @property
    def is_data(self) -> bool:
        values = self.values()
        if not values or all(_YEAR.match(v.text) for v in values):
            return False  # a line of years heads its columns
        return len(values) >= 2 or not self.phrases[0].is_value

    @property
    def words(self) -> int:
        return sum(len(p.text.split()) for p in self.phrases)


@dataclass(slots=True)
class GridTable:
    """A table: its columns (left to right), column labels, and body rows of cells by column."""

    bbox: Box
    columns: list[tuple[float, float]]  # x-range of each column
    labels: list[str]  # column label of each column ("" where it has none)
    label_boxes: list[Box | None]  # where each label is printed (None: no label)
    rows: list[list[Phrase | None]]  # body rows, one cell (or None) per column
    members: list[int] = field(default_factory=list)  # raw word indices of the table (labels and body)


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def visual_lines(raw: list[RawWord]) -> list[list[int]]:
    """Indices of ``raw`` grouped into visual lines (top to bottom, each left to right)."""
    order = sorted(range(len(raw)), key=lambda k: ((raw[k][1] + raw[k][3]) / 2, raw[k][0]))
    lines: list[list[int]] = []
    cy_line, h_line = -1e9, 0.0
    for k in order:
        y0, y1 = raw[k][1], raw[k][3]
        cy, h = (y0 + y1) / 2, max(y1 - y0, 0.1)
        if lines and abs(cy - cy_line) <= _LINE_TOL * min(h, h_line):
            lines[-1].append(k)
        else:
            lines.append([k])
            cy_line, h_line = cy, h
    for line in lines:
        line.sort(key=lambda k: raw[k][0])
    return lines


def _phrases(raw: list[RawWord], line: list[int]) -> list[Phrase]:
    height = max(raw[k][3] - raw[k][1] for k in line)
    gap = max(_MIN_GAP_PT, _PHRASE_GAP * height)
    out: list[Phrase] = []
    for k in line:
        x0, y0, x1, y1, text = raw[k]
        if out and x0 - out[-1].box[2] < gap:
            last = out[-1]
            last.text, last.box = f"{last.text} {text}", _union(last.box, (x0, y0, x1, y1))
            last.words.append(k)
        else:
            out.append(Phrase(text, (x0, y0, x1, y1), [k]))
    return _join_symbols(out)


def _join_symbols(phrases: list[Phrase]) -> list[Phrase]:
    """``$`` joins the value after it; ``%`` / ``)`` the one before (they often sit apart)."""
    out: list[Phrase] = []
    carry: Phrase | None = None
    for p in phrases:
        if p.text in _JOIN_NEXT:
            if carry is not None:
                out.append(carry)
            carry = p
            continue
        if carry is not None:
            if p.is_value:
                p = Phrase(f"{carry.text} {p.text}", _union(carry.box, p.box), carry.words + p.words)
            else:
                out.append(carry)
            carry = None
        if p.text in _JOIN_PREV and out and out[-1].is_value:
            prev = out[-1]
            out[-1] = Phrase(f"{prev.text} {p.text}", _union(prev.box, p.box), prev.words + p.words)
            continue
        out.append(p)
    if carry is not None:
        out.append(carry)
    return out


def page_lines(raw: list[RawWord]) -> list[Line]:
    out = []
    for idx in visual_lines(raw):
        phrases = _phrases(raw, idx)
        out.append(Line(phrases, min(raw[k][1] for k in idx), max(raw[k][3] for k in idx)))
    return out


def value_count(raw: list[RawWord]) -> int:
    """Words that look like a value (the pre-test: a page with fewer than :data:`MIN_VALUES` is skipped)."""
    return sum(1 for w in raw if any(ch.isdigit() for ch in w[4]) and _VALUE.match(w[4]))


def _bands(boxes: list[Box]) -> list[tuple[float, float]]:
    """x-ranges of boxes clustered by horizontal overlap (right-aligned values of one column overlap)."""
    bands: list[list[float]] = []
    for x0, _, x1, _ in sorted(boxes):
        if bands and x0 < bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], x1)
        else:
            bands.append([x0, x1])
    return [(a, b) for a, b in bands]


def _band_of(box: Box, bands: list[tuple[float, float]]) -> int | None:
    best, best_overlap = None, 0.0
    for j, (lo, hi) in enumerate(bands):
        overlap = min(hi, box[2]) - max(lo, box[0])
        if overlap > best_overlap:
            best, best_overlap = j, overlap
    return best


def _blocks(lines: list[Line]) -> list[tuple[int, int]]:
    """[first, last] line ranges (inclusive) of runs of data lines close to each other."""
    out: list[tuple[int, int]] = []
    start = last = None
    between = 0
    for i, line in enumerate(lines):
        if line.is_data:
            near = last is not None and line.y0 - lines[i - 1].y1 <= _LINE_GAP * line.height
            if start is not None and last is not None and near and between <= _MAX_BETWEEN:
                last = i
            else:
                if start is not None and last is not None:
                    out.append((start, last))
                start = last = i
            between = 0
        elif start is not None:
            near = line.y0 - lines[i - 1].y1 <= _LINE_GAP * max(line.height, 1.0)
            if line.words > _SHORT_WORDS or not near:
                out.append((start, last if last is not None else start))
                start = last = None
            between += 1
    if start is not None and last is not None:
        out.append((start, last))
    return out


def _table(lines: list[Line], first: int, last: int) -> GridTable | None:
    data = [ln for ln in lines[first:last + 1] if ln.is_data]
    value_bands = _bands([v.box for ln in data for v in ln.values()])
    shared = [sum(1 for ln in data if any(_band_of(v.box, value_bands) == j for v in ln.values()))
              for j in range(len(value_bands))]
    if len(data) < 2 or max(shared, default=0) < 2:
        return None
    while first < last and _header_like(lines[first], value_bands):
        first += 1  # a header line with a value in it ("(0.75)") is still a header line
    while first > 0 and lines[first - 1].words <= _SHORT_WORDS and not lines[first - 1].is_data and \
            lines[first].y0 - lines[first - 1].y1 <= _LINE_GAP * lines[first].height and \
            all(_overlaps_none(p.box, value_bands) for p in lines[first - 1].phrases):
        first -= 1  # section labels above the first row ("Net sales:") are rows of the table
    right = max(hi for lo, hi in value_bands)
    body = lines[first:last + 1]
    cells = [[p for p in ln.phrases if p.box[0] <= right] for ln in body]
    text_boxes = [p.box for row in cells for p in row if not p.is_value and _overlaps_none(p.box, value_bands)]
    columns = sorted(value_bands + _bands(text_boxes))
    value_columns = [columns.index(b) for b in value_bands]
    rows = _rows(cells, columns)
    labels, label_boxes, header_words = _labels(lines, first, columns, value_columns)
    members = header_words + [k for row in cells for p in row for k in p.words]
    boxes = [p.box for row in cells for p in row] + [b for b in label_boxes if b is not None]
    bbox = boxes[0]
    for b in boxes[1:]:
        bbox = _union(bbox, b)
    return GridTable(bbox, columns, labels, label_boxes, rows, members)


def _overlaps_none(box: Box, bands: list[tuple[float, float]]) -> bool:
    return all(box[2] <= lo or box[0] >= hi for lo, hi in bands)


def _rows(cells: list[list[Phrase]], columns: list[tuple[float, float]]) -> list[list[Phrase | None]]:
    """Body rows by column; a label-only line that continues into the next row's label (which starts
    in lower case) is joined with it."""
    rows: list[list[Phrase | None]] = []
    pending: Phrase | None = None
    for line in cells:
        row: list[Phrase | None] = [None] * len(columns)
        for p in line:
            j = _band_of(p.box, columns)
            if j is None:
                continue
            old = row[j]
            row[j] = p if old is None else Phrase(f"{old.text} {p.text}", _union(old.box, p.box), old.words + p.words)
        filled = [c for c in row if c is not None]
        if pending is not None and row[0] is not None and row[0].text[:1].islower():
            first = row[0]
            row[0] = Phrase(f"{pending.text} {first.text}", _union(pending.box, first.box), pending.words + first.words)
            rows.pop()
        pending = filled[0] if len(filled) == 1 and row[0] is not None else None
        if filled:
            rows.append(row)
    return rows


def _over(p: Phrase, lo: float, hi: float) -> bool:
    """Whether a label phrase stands over the column ``lo..hi`` (half of the narrower of the two)."""
    overlap = min(hi, p.box[2]) - max(lo, p.box[0])
    return overlap > 0 and overlap >= 0.5 * min(hi - lo, p.box[2] - p.box[0])


def _header_like(line: Line, value_columns: list[tuple[float, float]]) -> bool:
    """Words over the value columns that are mostly not values (``simple complex all (0.75)``)."""
    over = [p for p in line.phrases if any(_over(p, lo, hi) for lo, hi in value_columns)]
    return sum(not p.is_value for p in over) > sum(p.is_value for p in over)


def _labels(lines: list[Line], first: int, columns: list[tuple[float, float]], value_columns: list[int]
            ) -> tuple[list[str], list[Box | None], list[int]]:
    """Column labels from the short lines above line ``first`` (and the word indices they use), bottom
    up: a phrase labels every column whose extent it overlaps; a column's extent grows by the phrases
    that label it alone, so a spanning label higher up ("Three Months Ended") covers the columns whose
    own labels ("June 25, 2022") it stands over."""
    width = columns[-1][1] - columns[0][0]
    extents = [list(c) for c in columns]
    parts: list[list[str]] = [[] for _ in columns]
    boxes: list[Box | None] = [None] * len(columns)
    used: list[int] = []
    below = lines[first]
    for line in reversed(lines[max(0, first - _HEADER_LINES):first]):
        if below.y0 - line.y1 > _LINE_GAP * max(line.height, 1.0):
            break
        inside = [p for p in line.phrases if p.box[0] < columns[-1][1] and p.box[2] > columns[0][0]]
        if any(len(p.text.split()) > _LABEL_WORDS or p.box[2] - p.box[0] > 0.6 * width for p in inside):
            break  # a title or a note over the whole table ends its labels
        hits = [(p, [j for j, (lo, hi) in enumerate(extents) if min(hi, p.box[2]) - max(lo, p.box[0]) > 1.0])
                for p in inside]
        if not any(j != 0 or 0 in value_columns for _, js in hits for j in js):
            break  # a line over the row labels only: the table's title, or text
        for p, js in hits:
            for j in js:
                parts[j].insert(0, p.text)
                boxes[j] = p.box if boxes[j] is None else _union(p.box, boxes[j])  # type: ignore[arg-type]
            if len(js) == 1:
                ext = extents[js[0]]
                ext[0], ext[1] = min(ext[0], p.box[0]), max(ext[1], p.box[2])
            if js:
                used.extend(p.words)
        below = line
    return [" ".join(p) for p in parts], boxes, used


def find_grid_tables(raw: list[RawWord]) -> list[GridTable]:
    """The numeric tables of a page's words (top to bottom); none when fewer than :data:`MIN_VALUES`
    words look like values."""
    if value_count(raw) < MIN_VALUES:
        return []
    lines = page_lines(raw)
    out = []
    for first, last in _blocks(lines):
        table = _table(lines, first, last)
        if table is not None:
            out.append(table)
    return out
