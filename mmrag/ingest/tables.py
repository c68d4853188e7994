"""Tables in the text layer as rows that keep each cell with its row and column labels.

PyMuPDF's ``find_tables`` (default "lines" strategy) gives the cell grid; the cell texts are taken
from the page's own words (those whose centre lies in the cell), so spacing is the text layer's.
Column labels come from the table's first row when it is a header (text, not numbers), else from
the short phrases printed just above the table (a spanning "Three Months Ended" belongs to every
column under it). Each data row becomes one Markdown row in which every value carries its column
label::

    | Total net sales | Three Months Ended June 25, 2022: $ 82,959 | Nine Months Ended June 25, 2022: $ 304,182 |

The words of a row keep the boxes of their cells, so a hit highlights the cells. The table's
original words are replaced by its rows, at the place of the table's first word. Pages without
vector drawings cannot have a "lines" table and are skipped at no cost.

A table continued over a page break often does not repeat its header: a page's first table at the
top of the page, with neither a header row nor labels above it, takes the column labels of the
previous page's last table (when that one runs to the foot of its page and has as many columns), so
its values still carry their column labels (:func:`read_tables`, ``inherited``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymupdf

from mmrag.types import BBox, Word

_NUMERIC = re.compile(r"^[\s$€£¥%()\-–—.,0-9]*$")
_JOIN_NEXT = {"$", "€", "£", "¥", "("}
_JOIN_PREV = {"%", ")", "%)"}
_ABOVE_PT = 48.0  # how far above a table its column labels are looked for
_PHRASE_GAP_PT = 6.0  # words closer than this on a line form one phrase
_LABEL_WORDS = 8  # a longer phrase above a table is a note, not a column label
_EDGE_WORDS = 15  # words between a table and the page's top / foot that leave it "at the edge" (header, footer)


@dataclass(slots=True)
class _Cell:
    text: str
    box: tuple[float, float, float, float]  # page coordinates (unrotated), points


def _inside(word: tuple[float, float, float, float], box: tuple[float, float, float, float]) -> bool:
    cx, cy = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
    return box[0] <= cx <= box[2] and box[1] <= cy <= box[3]


def _cell_text(raw: list[tuple[float, float, float, float, str]], box: tuple[float, float, float, float]) -> str:
    return " ".join(w[4] for w in raw if _inside(w[:4], box))


def _phrases(raw: list[tuple[float, float, float, float, str]]) -> list[_Cell]:
    """Words grouped into phrases: same line, small gaps."""
    out: list[_Cell] = []
    for x0, y0, x1, y1, text in sorted(raw, key=lambda w: (round(w[3]), w[0])):
        last = out[-1] if out else None
        if last and abs(last.box[3] - y1) < 2 and x0 - last.box[2] < _PHRASE_GAP_PT:
            last.text += " " + text
            last.box = (last.box[0], min(last.box[1], y0), x1, max(last.box[3], y1))
        else:
            out.append(_Cell(text, (x0, y0, x1, y1)))
    return out


def _columns(table: pymupdf.table.Table) -> list[tuple[float, float]]:
    spans: dict[int, tuple[float, float]] = {}
    for row in table.rows:
        for j, box in enumerate(row.cells):
            if box is not None:
                lo, hi = spans.get(j, (box[0], box[2]))
                spans[j] = (min(lo, box[0]), max(hi, box[2]))
    return [spans.get(j, (0.0, 0.0)) for j in range(max(spans, default=-1) + 1)]


def _labels_above(table: pymupdf.table.Table, raw: list[tuple[float, float, float, float, str]],
                  cols: list[tuple[float, float]]) -> list[str]:
    x0, y0, x1, _ = table.bbox
    band = [w for w in raw if y0 - _ABOVE_PT <= (w[1] + w[3]) / 2 < y0 and w[2] > x0 and w[0] < x1]
    labels: list[list[str]] = [[] for _ in cols]
    for phrase in _phrases(band):
        if phrase.box[2] - phrase.box[0] > 0.6 * (x1 - x0) or len(phrase.text.split()) > _LABEL_WORDS:
            continue  # a title or a note over the whole table, not a column label
        for j, (lo, hi) in enumerate(cols):
            if phrase.box[0] < hi and phrase.box[2] > lo:
                labels[j].append(phrase.text)
    return [" ".join(parts) for parts in labels]


def _merge_symbols(cells: list[tuple[int, _Cell]]) -> list[tuple[int, _Cell]]:
    """``$`` joins the value after it, ``%`` / ``)`` the one before (they sit in their own columns)."""
    out: list[tuple[int, _Cell]] = []
    carry: _Cell | None = None
    for j, cell in cells:
        if cell.text in _JOIN_NEXT:
            carry = cell
            continue
        if carry is not None:
            cell = _Cell(f"{carry.text} {cell.text}", _union(carry.box, cell.box))
            carry = None
        if cell.text in _JOIN_PREV and out:
            pj, prev = out[-1]
            out[-1] = (pj, _Cell(f"{prev.text} {cell.text}", _union(prev.box, cell.box)))
            continue
        out.append((j, cell))
    return out


Box = tuple[float, float, float, float]


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _grid(table: pymupdf.table.Table, raw: list[tuple[float, float, float, float, str]]) -> list[list[_Cell | None]]:
    grid: list[list[_Cell | None]] = []
    for row in table.rows:
        cells: list[_Cell | None] = []
        for box in row.cells:
            text = _cell_text(raw, tuple(box)) if box is not None else ""
            cells.append(_Cell(text, tuple(box)) if box is not None and text else None)
        grid.append(cells)
    return grid


def _is_header(row: list[_Cell | None]) -> bool:
    values = [c.text for c in row[1:] if c is not None]
    return bool(values) and not any(_NUMERIC.match(v) for v in values)


@dataclass(slots=True)
class TableRows:
    rows: list[list[_Cell]]  # data rows: each a list of cells whose text carries its column label
    labels: list[str]  # column labels (its own, or inherited from the table it continues)
    inherited: bool  # the labels came from the previous page's table (no header of its own)


def table_rows(table: pymupdf.table.Table, raw: list[tuple[float, float, float, float, str]],
               inherited: list[str] | None = None) -> TableRows:
    """The table's data rows. A table with neither a header row nor labels above it takes ``inherited``
    (the column labels of the table it continues) when the column counts agree."""
    grid = [r for r in _grid(table, raw) if any(r)]
    if not grid:
        return TableRows([], [], False)
    cols = _columns(table)
    took = False
    if _is_header(grid[0]):
        labels = [c.text if c is not None else "" for c in grid[0]]
        header_boxes = [c.box if c is not None else None for c in grid[0]]
        grid = grid[1:]
    else:
        labels, header_boxes = _labels_above(table, raw, cols), [None] * len(cols)
        if not any(labels) and inherited and any(inherited[1:]) and len(inherited) == len(cols):
            labels, took = list(inherited), True
    rows = []
    for r in grid:
        out = []
        for j, cell in _merge_symbols([(j, c) for j, c in enumerate(r) if c is not None]):
            label = labels[j] if j < len(labels) else ""
            if j > 0 and label and label != cell.text:
                box = header_boxes[j] if j < len(header_boxes) and header_boxes[j] is not None else cell.box
                out.append(_Cell(f"{label}:", box))  # type: ignore[arg-type]
            out.append(cell)
        rows.append(out)
    return TableRows(rows, labels, took)


def _row_words(row: list[_Cell], norm: pymupdf.Matrix, size: tuple[float, float]) -> list[Word]:
    """A row as words: ``|`` between cells; each word boxed by its cell (normalised, displayed page)."""
    words: list[Word] = []
    for i, cell in enumerate(row):
        r = pymupdf.Rect(cell.box) * norm
        box: BBox = (max(0.0, r.x0 / size[0]), max(0.0, r.y0 / size[1]), min(1.0, r.x1 / size[0]),
                     min(1.0, r.y1 / size[1]))
        if i == 0 or not row[i - 1].text.endswith(":"):
            words.append(Word(text="|", bbox=box))
        words.extend(Word(text=t, bbox=box) for t in cell.text.split())
    if words:
        words.append(Word(text="|", bbox=words[-1].bbox))
    return words


@dataclass(slots=True)
class PageTables:
    """A page's words with its tables as rows, and the header a next page may continue."""

    words: list[Word]
    last_labels: list[str] | None  # column labels of the page's last table when it runs to the page's foot
    continued: list[str]  # labels the page's first table took from the previous page's last table ([]: none)


def _words_beyond(raw: list[tuple[float, float, float, float, str]], bbox: Box, above: bool) -> int:
    """Words above the table's top (``above``) or below its bottom."""
    if above:
        return sum(1 for w in raw if (w[1] + w[3]) / 2 < bbox[1])
    return sum(1 for w in raw if (w[1] + w[3]) / 2 > bbox[3])


def read_tables(page: pymupdf.Page, words: list[Word], inherited: list[str] | None = None) -> PageTables:
    """``words`` (the page's text layer, in reading order) with every table's words replaced by its
    rows. ``words`` must be :func:`mmrag.ingest.pdf.page_words` of ``page`` (same order and count as
    ``get_text("words", sort=True)``). ``inherited``: the column labels of the previous page's last table
    (:attr:`PageTables.last_labels`); a first table at the top of this page without a header of its own
    continues it. "At the top" / "at the foot": at most :data:`_EDGE_WORDS` words (a running header or
    footer) between the table and the page's edge."""
    if not page.get_cdrawings():
        return PageTables(words, None, [])
    tables = sorted(page.find_tables().tables, key=lambda t: t.bbox[1])
    if not tables:
        return PageTables(words, None, [])
    raw = [(w[0], w[1], w[2], w[3], w[4]) for w in page.get_text("words", sort=True)]
    if len(raw) != len(words):
        return PageTables(words, None, [])
    size = (page.rect.width, page.rect.height)
    replaced: dict[int, list[Word]] = {}
    dropped: set[int] = set()
    continued: list[str] = []
    last: TableRows | None = None
    for i, table in enumerate(tables):
        last = None
        at_top = i == 0 and _words_beyond(raw, tuple(table.bbox), above=True) <= _EDGE_WORDS
        members = [k for k, w in enumerate(raw) if _inside(w[:4], tuple(table.bbox))]
        found = table_rows(table, raw, inherited if at_top else None)
        if not members or not found.rows:
            continue
        continued = found.labels if found.inherited else continued
        last = found
        dropped.update(members)
        replaced[members[0]] = [w for row in found.rows for w in _row_words(row, page.rotation_matrix, size)]
    at_foot = last is not None and _words_beyond(raw, tuple(tables[-1].bbox), above=False) <= _EDGE_WORDS
    out: list[Word] = []
    for k, w in enumerate(words):
        if k in replaced:
            out.extend(replaced[k])
        if k not in dropped:
            out.append(w)
    return PageTables(out, last.labels if at_foot and last is not None and any(last.labels[1:]) else None,
                      continued)


def words_with_tables(page: pymupdf.Page, words: list[Word], inherited: list[str] | None = None) -> list[Word]:
    """:func:`read_tables`' words."""
    return read_tables(page, words, inherited).words
