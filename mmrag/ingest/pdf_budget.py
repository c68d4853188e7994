"""What drawing a PDF page will cost, read before it is drawn: the obvious bombs fail fast.

MuPDF draws a form XObject each time a content stream says ``/Name Do``; a form that draws another
form four times, twelve levels deep, is 4**12 draws from a 3 KB file, and eight pages may share one
content stream that inflates to 128 MiB. :func:`check_pages` walks each page's content streams and
form XObjects without drawing them: it counts the draws (a form counted each time it is drawn) and the
content bytes drawn (inflated, at most the limit), and refuses a page over ``max_page_draws`` or
``max_page_content_bytes`` with :class:`~mmrag.errors.TooComplex`. What it cannot see (other filters,
dense operators) is left to the parse worker's clock (:mod:`mmrag.jobs.parse_pool`).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import pymupdf

from mmrag.config import IngestConfig
from mmrag.errors import TooComplex

_REF = re.compile(rb"/([^\s/<>\[\]()]+)\s*(\d+)\s+\d+\s+R")
_DO = re.compile(rb"/([^\s/<>\[\]()]+)\s*Do\b")
_PARENTS = 32  # page-tree levels searched for inherited resources


@dataclass(frozen=True, slots=True)
class Cost:
    """What drawing one stream costs, forms it draws included."""

    draws: int  # XObject draws
    content_bytes: int  # content-stream bytes read


@dataclass(slots=True)
class _Walk:
    """One page's walk: costs of forms already seen (keyed by xref) and the limits."""

    doc: pymupdf.Document
    max_draws: int
    max_bytes: int
    seen: dict[int, Cost] = field(default_factory=dict)
    open: set[int] = field(default_factory=set)  # forms being walked (a cycle draws forever)


def _inflated(doc: pymupdf.Document, xref: int, limit: int) -> bytes:
    """The stream's bytes, inflated up to ``limit`` + 1 bytes (Flate or none; other filters as stored)."""
    raw = doc.xref_stream_raw(xref) or b""
    _, value = doc.xref_get_key(xref, "Filter")
    if value.strip("[] ") not in ("/FlateDecode", "/Fl"):  # none, or filters this does not inflate
        return raw[:limit + 1]
    try:
        return zlib.decompressobj().decompress(raw, limit + 1)
    except zlib.error:
        return raw[:limit + 1]


def _xobjects(doc: pymupdf.Document, xref: int, inherit: bool = False) -> dict[bytes, int]:
    """The XObject names of ``xref``'s resources (a page's inherited from its parents) -> their xrefs."""
    for _ in range(_PARENTS if inherit else 1):
        kind, value = doc.xref_get_key(xref, "Resources/XObject")
        if kind == "xref":
            value = doc.xref_object(int(value.split()[0]), compressed=True)
        if kind != "null":
            return {m[0]: int(m[1]) for m in _REF.findall(value.encode())}
        if doc.xref_get_key(xref, "Resources")[0] != "null":
            return {}
        parent = doc.xref_get_key(xref, "Parent")
        if parent[0] != "xref":
            return {}
        xref = int(parent[1].split()[0])
    return {}


def _stream_cost(walk: _Walk, content: bytes, names: dict[bytes, int]) -> Cost:
    draws, size = 0, len(content)
    for name in _DO.findall(content):
        child = names.get(name)
        sub = _form_cost(walk, child) if child else Cost(0, 0)
        draws, size = draws + 1 + sub.draws, size + sub.content_bytes
        if draws > walk.max_draws or size > walk.max_bytes:
            break
    return Cost(draws, size)


def _form_cost(walk: _Walk, xref: int) -> Cost:
    if xref in walk.seen:
        return walk.seen[xref]
    if xref in walk.open or walk.doc.xref_get_key(xref, "Subtype")[1] != "/Form":
        return Cost(walk.max_draws + 1 if xref in walk.open else 0, 0)
    walk.open.add(xref)
    cost = _stream_cost(walk, _inflated(walk.doc, xref, walk.max_bytes), _xobjects(walk.doc, xref))
    walk.open.discard(xref)
    walk.seen[xref] = cost
    return cost


def page_cost(doc: pymupdf.Document, number: int, config: IngestConfig) -> Cost:
    """Draws and content bytes of page ``number`` (1-based), counted up to just past the limits."""
    page = doc.load_page(number - 1)
    walk = _Walk(doc, config.max_page_draws, config.max_page_content_bytes)
    names = _xobjects(doc, page.xref, inherit=True)
    draws = size = 0
    for xref in page.get_contents():
        cost = _stream_cost(walk, _inflated(doc, xref, walk.max_bytes - size), names)
        draws, size = draws + cost.draws, size + cost.content_bytes
        if draws > walk.max_draws or size > walk.max_bytes:
            break
    return Cost(draws, size)


def check_pages(doc: pymupdf.Document, first: int, last: int, config: IngestConfig) -> None:
    """Refuse (TooComplex) the first of pages ``first..last`` that would draw too much."""
    for number in range(max(1, first), min(last, doc.page_count) + 1):
        cost = page_cost(doc, number, config)
        if cost.draws > config.max_page_draws:
            raise TooComplex(f"page {number} draws more than {config.max_page_draws:,} XObjects (nested forms "
                             "count each time they are drawn); the limit is MMRAG_INGEST__MAX_PAGE_DRAWS",
                             detail={"limit": "max_page_draws", "page": number})
        if cost.content_bytes > config.max_page_content_bytes:
            raise TooComplex(f"page {number} draws more than {config.max_page_content_bytes:,} bytes of content "
                             "streams (inflated; forms count each time they are drawn); the limit is "
                             "MMRAG_INGEST__MAX_PAGE_CONTENT_BYTES",
                             detail={"limit": "max_page_content_bytes", "page": number})
