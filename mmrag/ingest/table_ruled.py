"""Tables drawn as a ruled grid (cell borders), for the ones whose cells are not numbers in columns.

:mod:`mmrag.ingest.table_grid` finds numeric tables from the words alone; a table of text in bordered
cells (a converted DOCX, a feature matrix) has no aligned values, but its borders say where the cells
are. The pre-test is cheap (the page's vector drawings, already extracted as plain tuples): at least
:data:`MIN_RULES` vertical and as many horizontal rules that cross each other. Only then does
PyMuPDF's ``find_tables`` run, with its line strategy, without its layout model (``use_layout=False``:
the ONNX layout model costs about a second a page on two CPU cores) and clipped to the ruled region.
Cell texts are the page's own words whose centre lies in the cell.
"""

from __future__ import annotations

import re
from typing import Any

import pymupdf

from mmrag.ingest.table_grid import Box, GridTable, Phrase, RawWord

MIN_RULES = 3  # distinct vertical and horizontal rules a ruled grid has at least
_MIN_RULE_PT = 6.0  # shorter strokes are glyph parts or bullets, not rules
_THIN_PT = 1.5  # a filled rectangle thinner than this is a rule
_NUMERIC = re.compile(r"^[\s$€£¥%()\-–—.,0-9]*$")
_ABOVE_PT = 48.0  # how far above a table its column labels are looked for
_PHRASE_GAP_PT = 6.0
_LABEL_WORDS = 8


def _segments(drawings: list[dict[str, Any]]) -> tuple[list[Box], list[Box]]:
    """(vertical, horizontal) rules as boxes: stroked lines and rectangle edges, thin filled rectangles."""
    vertical: list[Box] = []
    horizontal: list[Box] = []

    def add(x0: float, y0: float, x1: float, y1: float) -> None:
        if abs(x1 - x0) <= _THIN_PT and abs(y1 - y0) >= _MIN_RULE_PT:
            vertical.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
        elif abs(y1 - y0) <= _THIN_PT and abs(x1 - x0) >= _MIN_RULE_PT:
            horizontal.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))

    for path in drawings:
        stroked = "s" in (path.get("type") or "")
        for item in path["items"]:
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                add(x0, y0, x1, y1)
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if stroked:
                    for edge in ((x0, y0, x0, y1), (x1, y0, x1, y1), (x0, y0, x1, y0), (x0, y1, x1, y1)):
                        add(*edge)
                else:
                    add(x0, y0, x1, y1)  # a thin filled rectangle is a rule; a wider one is shading
    return vertical, horizontal


def crossings(drawings: list[dict[str, Any]]) -> list[tuple[float, float, Box, Box]]:
    """Where a vertical rule meets a horizontal one: (x, y, vertical, horizontal)."""
    vertical, horizontal = _segments(drawings)
    if len({round(v[0]) for v in vertical}) < MIN_RULES or len({round(h[1]) for h in horizontal}) < MIN_RULES:
        return []
    return [(v[0], h[1], v, h) for v in vertical for h in horizontal
            if h[0] - 2 <= v[0] <= h[2] + 2 and v[1] - 2 <= h[1] <= v[3] + 2]


def ruled_region(points: list[tuple[float, float, Box, Box]]) -> Box | None:
    """The region of the rules that cross at ``points`` when they form a grid (at least
    :data:`MIN_RULES` distinct columns and rows of crossings), else None: the pre-test."""
    if len({round(p[0]) for p in points}) < MIN_RULES or len({round(p[1]) for p in points}) < MIN_RULES:
        return None
    boxes = [b for p in points for b in p[2:]]
    return (min(b[0] for b in boxes) - 1, min(b[1] for b in boxes) - 1,
            max(b[2] for b in boxes) + 1, max(b[3] for b in boxes) + 1)


def _inside(word: RawWord | Box, box: Box) -> bool:
    cx, cy = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _cell(raw: list[RawWord], box: Box) -> Phrase | None:
    members = [k for k, w in enumerate(raw) if _inside(w, box)]
    return Phrase(" ".join(raw[k][4] for k in members), box, members) if members else None


def _columns(table: pymupdf.table.Table) -> list[tuple[float, float]]:
    spans: dict[int, tuple[float, float]] = {}
    for row in table.rows:
        for j, box in enumerate(row.cells):
            if box is not None:
                lo, hi = spans.get(j, (box[0], box[2]))
                spans[j] = (min(lo, box[0]), max(hi, box[2]))
    return [spans.get(j, (0.0, 0.0)) for j in range(max(spans, default=-1) + 1)]


def _labels_above(bbox: Box, raw: list[RawWord], cols: list[tuple[float, float]]
                  ) -> tuple[list[str], list[Box | None], list[int]]:
    """Short phrases printed just above the table (a spanning label belongs to every column under it)."""
    x0, y0, x1, _ = bbox
    band = sorted((k for k, w in enumerate(raw) if y0 - _ABOVE_PT <= (w[1] + w[3]) / 2 < y0 and w[2] > x0
                   and w[0] < x1), key=lambda k: (round(raw[k][3]), raw[k][0]))
    phrases: list[Phrase] = []
    for k in band:
        w = raw[k]
        last = phrases[-1] if phrases else None
        if last and abs(last.box[3] - w[3]) < 2 and w[0] - last.box[2] < _PHRASE_GAP_PT:
            last.text, last.box = f"{last.text} {w[4]}", (last.box[0], min(last.box[1], w[1]), w[2],
                                                           max(last.box[3], w[3]))
            last.words.append(k)
        else:
            phrases.append(Phrase(w[4], w[:4], [k]))
    labels: list[list[str]] = [[] for _ in cols]
    boxes: list[Box | None] = [None] * len(cols)
    used: list[int] = []
    for p in phrases:
        if p.box[2] - p.box[0] > 0.6 * (x1 - x0) or len(p.text.split()) > _LABEL_WORDS:
            continue  # a title or a note over the whole table, not a column label
        for j, (lo, hi) in enumerate(cols):
            if p.box[0] < hi and p.box[2] > lo:
                labels[j].append(p.text)
                boxes[j] = p.box
                used.extend(p.words)
    return [" ".join(parts) for parts in labels], boxes, used


def grid_of(table: pymupdf.table.Table, raw: list[RawWord]) -> GridTable | None:
    """A ``find_tables`` table as a :class:`GridTable`: its first row labels the columns when it is text
    (not numbers), else the short phrases above it do."""
    bbox: Box = tuple(table.bbox)  # type: ignore[assignment]
    grid = [[_cell(raw, tuple(box)) if box is not None else None for box in row.cells] for row in table.rows]
    grid = [r for r in grid if any(r)]
    if not grid:
        return None
    cols = _columns(table)
    values = [c.text for c in grid[0][1:] if c is not None]
    if values and not any(_NUMERIC.match(v) for v in values):
        head = grid.pop(0)
        labels = [c.text if c is not None else "" for c in head]
        boxes: list[Box | None] = [c.box if c is not None else None for c in head]
        used = [k for c in head if c is not None for k in c.words]
    else:
        labels, boxes, used = _labels_above(bbox, raw, cols)
    members = used + [k for row in grid for c in row if c is not None for k in c.words]
    return GridTable(bbox, cols, labels, boxes, grid, members) if grid else None


def _within(x: float, y: float, box: Box) -> bool:
    return box[0] - 2 <= x <= box[2] + 2 and box[1] - 2 <= y <= box[3] + 2


def ruled_tables(page: pymupdf.Page, raw: list[RawWord], covered: list[Box]) -> list[GridTable]:
    """Tables of the page's ruled grid, where its rules cross outside the tables in ``covered`` (the
    numeric tables already found: a statement drawn with cell borders needs no second search)."""
    points = [p for p in crossings(page.get_cdrawings()) if not any(_within(p[0], p[1], c) for c in covered)]
    region = ruled_region(points)
    if region is None:
        return []
    found = page.find_tables(clip=pymupdf.Rect(region), use_layout=False)
    out = []
    for table in found.tables if found is not None else []:
        grid = grid_of(table, raw)
        if grid is not None:
            out.append(grid)
    return out
