"""Tables in the text layer as rows that keep each cell with its row and column labels.

Where the tables are: numeric tables from the words alone (:mod:`mmrag.ingest.table_grid`: aligned
value columns, a few milliseconds a page), and ruled grids of text cells from the page's borders
(:mod:`mmrag.ingest.table_ruled`: PyMuPDF ``find_tables``, line strategy, clipped to the grid, run
only on pages whose drawings pass the pre-test). PyMuPDF's layout model is never run.

How a table is written (``IngestConfig.table_rows``), at the place of the table's first word, in
place of the table's own words:

- ``header`` (default): the column labels once, as a header line, then each row once::

      | | Three Months Ended June 25, 2022 | Three Months Ended June 26, 2021 |
      | Total net sales | 82,959 | 81,434 |

- ``chunk-header``: written as ``header``; in addition, a text chunk that starts inside a table (past
  its header line) is embedded after that header line (:func:`mmrag.ingest.chunking.table_headers`),
  so the dense space sees every row with its column labels without the page text repeating them;

- ``labelled``: every value carries its column label (the labels repeat in every row)::

      | Total net sales | Three Months Ended June 25, 2022: 82,959 | Three Months Ended June 26, 2021: 81,434 |

The words of a row keep the boxes of their cells, so a hit highlights the cells.

BM25 indexes the tables ``labelled`` whatever ``table_rows`` the text has
(``IngestConfig.bm25_table_rows``; :attr:`PageTables.labelled`, stored as the page's ``bm25_text``): a
bag of words finds a cell by its row and column words when the column label stands beside each value,
while the dense space, the stored text and the answer's evidence keep the shorter form, where repeated
labels were noise (docs/benchmarks.md, "Tables, speed and rows").

A table continued over a page break often does not repeat its header: a page's first table at the
top of the page without labels of its own takes the column labels of the previous page's last table
(when that one runs to the foot of its page and has as many columns), so its values still carry their
column labels (:func:`read_tables`, ``inherited``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pymupdf

from mmrag.ingest.table_grid import Box, GridTable, Phrase, RawWord, find_grid_tables
from mmrag.ingest.table_ruled import ruled_tables
from mmrag.types import BBox, TableSpan, Word

TableRows = Literal["chunk-header", "header", "labelled"]
_JOIN_NEXT = {"$", "€", "£", "¥", "("}
_JOIN_PREV = {"%", ")", "%)"}
_EDGE_WORDS = 15  # words between a table and the page's top / foot that leave it "at the edge" (header, footer)


@dataclass(slots=True)
class _Cell:
    text: str
    box: Box  # page coordinates (unrotated), points


def _union(a: Box, b: Box) -> Box:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _merge_symbols(cells: list[tuple[int, Phrase]]) -> list[tuple[int, _Cell]]:
    """``$`` joins the value after it, ``%`` / ``)`` the one before (when they sit in their own columns)."""
    out: list[tuple[int, _Cell]] = []
    carry: _Cell | None = None
    for j, phrase in cells:
        cell = _Cell(phrase.text, phrase.box)
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


def _rows(table: GridTable, labels: list[str], how: TableRows) -> list[list[_Cell]]:
    """The table as rows of cells, written as ``how`` says (a ``labelled`` value cell is preceded by a
    ``"<label>:"`` cell boxed by where the label is printed)."""
    rows: list[list[_Cell]] = []
    if how != "labelled" and any(labels):
        rows.append([_Cell(label, box or table.bbox) for label, box in zip(labels, _label_boxes(table, labels),
                                                                               strict=True)])
    for r in table.rows:
        out: list[_Cell] = []
        for j, cell in _merge_symbols([(j, c) for j, c in enumerate(r) if c is not None]):
            label = labels[j] if j < len(labels) else ""
            if how == "labelled" and j > 0 and label and label != cell.text:
                box = table.label_boxes[j] if j < len(table.label_boxes) else None
                out.append(_Cell(f"{label}:", box or cell.box))
            out.append(cell)
        rows.append(out)
    return rows


def _label_boxes(table: GridTable, labels: list[str]) -> list[Box | None]:
    boxes = list(table.label_boxes) + [None] * max(0, len(labels) - len(table.label_boxes))
    return boxes[:len(labels)]


def _row_tokens(row: list[_Cell]) -> list[tuple[str, _Cell]]:
    """A row as words, each with the cell it belongs to: ``|`` between cells (not after a label cell)."""
    out: list[tuple[str, _Cell]] = []
    for i, cell in enumerate(row):
        if i == 0 or not row[i - 1].text.endswith(":"):
            out.append(("|", cell))
        out.extend((t, cell) for t in cell.text.split())
    return [*out, ("|", row[-1])] if row else out


def _row_texts(rows: list[list[_Cell]]) -> list[str]:
    """The words of ``rows`` as :func:`_row_words` writes them, without their boxes."""
    return [t for row in rows for t, _ in _row_tokens(row)]


def _row_words(row: list[_Cell], norm: pymupdf.Matrix, size: tuple[float, float]) -> list[Word]:
    """A row as words: ``|`` between cells; each word boxed by its cell (normalised, displayed page)."""
    boxes: dict[int, BBox] = {}  # one transform per cell, not per word
    for cell in row:
        r = pymupdf.Rect(cell.box) * norm
        boxes[id(cell)] = (max(0.0, r.x0 / size[0]), max(0.0, r.y0 / size[1]), min(1.0, r.x1 / size[0]),
                           min(1.0, r.y1 / size[1]))
    return [Word(text=text, bbox=boxes[id(cell)]) for text, cell in _row_tokens(row)]


@dataclass(slots=True)
class PageTables:
    """A page's words with its tables as rows, and the header a next page may continue."""

    words: list[Word]
    last_labels: list[str] | None  # column labels of the page's last table when it runs to the page's foot
    continued: list[str]  # labels the page's first table took from the previous page's last table ([]: none)
    spans: list[TableSpan] = field(default_factory=list)  # where each table's rows are in ``words``
    labelled: list[str] | None = None  # the words with every table written ``labelled`` (if asked, and not so)

    @property
    def tables(self) -> int:
        return len(self.spans)


def _words_beyond(raw: list[RawWord], bbox: Box, above: bool) -> int:
    """Words above the table's top (``above``) or below its bottom."""
    if above:
        return sum(1 for w in raw if (w[1] + w[3]) / 2 < bbox[1])
    return sum(1 for w in raw if (w[1] + w[3]) / 2 > bbox[3])


def find_tables(page: pymupdf.Page, raw: list[RawWord], ruled: bool = True) -> list[GridTable]:
    """The page's tables, top to bottom: numeric tables from the words and (``ruled``) the tables of a
    ruled grid whose rules cross outside them (such a table replaces the numeric ones it overlaps: a
    grid drawn around cells says better where they are)."""
    tables = find_grid_tables(raw)
    if ruled:
        grids = ruled_tables(page, raw, [t.bbox for t in tables])
        tables = [t for t in tables if not any(_overlap(t.bbox, g.bbox) for g in grids)] + grids
    return sorted(tables, key=lambda t: t.bbox[1])


def _overlap(a: Box, b: Box) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def read_tables(page: pymupdf.Page, raw: list[RawWord], words: list[Word], inherited: list[str] | None = None,
                how: TableRows = "header", ruled: bool = True, labelled: bool = False) -> PageTables:
    """``words`` (the page's text layer, in reading order) with every table's words replaced by its
    rows. ``raw`` and ``words`` are the same words (:func:`mmrag.ingest.pdf.page_text`): ``raw`` in page
    points, ``words`` normalised. ``inherited``: the column labels of the previous page's last table
    (:attr:`PageTables.last_labels`); a first table at the top of this page without labels of its own
    continues it. "At the top" / "at the foot": at most :data:`_EDGE_WORDS` words (a running header or
    footer) between the table and the page's edge. ``labelled``: also the page's words as ``labelled``
    rows would write them (:attr:`PageTables.labelled`, texts only; what BM25 indexes)."""
    tables = find_tables(page, raw, ruled)
    if not tables or len(raw) != len(words):
        return PageTables(words, None, [])
    size = (page.rect.width, page.rect.height)
    replaced: dict[int, list[Word]] = {}
    relabelled: dict[int, list[str]] = {}
    headers: dict[int, str] = {}
    dropped: set[int] = set()
    continued: list[str] = []
    last: list[str] | None = None
    taken: set[int] = set()
    for i, table in enumerate(tables):
        members = sorted(set(table.members) - taken)
        labels = table.labels
        at_top = i == 0 and _words_beyond(raw, table.bbox, above=True) <= _EDGE_WORDS
        if at_top and not any(labels) and inherited and any(inherited[1:]) and len(inherited) == len(labels):
            labels = continued = list(inherited)
        rows = _rows(table, labels, how)
        if not members or not any(rows):
            last = None
            continue
        taken.update(members)
        dropped.update(members)
        replaced[members[0]] = [w for row in rows for w in _row_words(row, page.rotation_matrix, size)]
        if labelled and how != "labelled":
            relabelled[members[0]] = _row_texts(_rows(table, labels, "labelled"))
        headers[members[0]] = " | ".join(label for label in labels if label)
        last = labels
    at_foot = last is not None and _words_beyond(raw, tables[-1].bbox, above=False) <= _EDGE_WORDS
    out: list[Word] = []
    spans: list[TableSpan] = []
    for k, w in enumerate(words):
        if k in replaced:
            spans.append(TableSpan(len(out), len(out) + len(replaced[k]), headers[k]))
            out.extend(replaced[k])
        if k not in dropped:
            out.append(w)
    return PageTables(out, last if at_foot and last is not None and any(last[1:]) else None, continued, spans,
                      _merged(words, dropped, relabelled) if relabelled else None)


def _merged(words: list[Word], dropped: set[int], rows: dict[int, list[str]]) -> list[str]:
    """The page's word texts with each table's words replaced by ``rows`` (at its first word)."""
    out: list[str] = []
    for k, w in enumerate(words):
        out.extend(rows.get(k, ()))
        if k not in dropped:
            out.append(w.text)
    return out
