"""Word boxes stored compactly: the page text already holds the words, so only the boxes are kept,
as four unsigned 16-bit fractions per word (1/65535 of the page: ~0.02 px on a 1,584 px page).

The stored form (``bytes``) codes each box against the word before it on the line: its left edge
from the previous word's right edge, its width, its top from the previous top and its height from
the previous height (all modulo 2^16, so exact), column by column, zlib-compressed: words of a line
share their top and height and follow each other, so ~3.5 bytes a word instead of 11 for the
base64 ``b16:`` text the catalog wrote before and ~45 for JSON ``[text, [x0, y0, x1, y1]]``.

Pages whose words cannot be recovered from the text (a word with a space in it) keep the JSON form;
all three forms are read.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from mmrag.types import Word

PREFIX = "b16:"  # the base64 text form of rows written before the coded form
_SCALE = 65535.0


def pack_words(words: list[Word], text: str) -> str | bytes:
    """The stored form of a page's words (``text`` is the page text, ``" ".join`` of the words)."""
    if not words:
        return b""
    if text != " ".join(w.text for w in words) or any(" " in w.text or not w.text for w in words):
        return json.dumps([[w.text, [round(v, 5) for v in w.bbox]] for w in words], ensure_ascii=False)
    boxes = np.clip(np.asarray([w.bbox for w in words], dtype=np.float64), 0.0, 1.0)
    return zlib.compress(code_boxes(np.rint(boxes * _SCALE).astype(np.int64)).astype("<u2").tobytes(), 9)


class PageWords(Sequence[Word]):
    """A page's words as read back: their texts and an (n, 4) array of boxes; a :class:`Word` is made
    only when read (a search's snippet reads a chunk of a page's ~800 words: making them all was most of
    its hydrate time on long reports)."""

    __slots__ = ("_boxes", "_texts")

    def __init__(self, texts: list[str], boxes: np.ndarray) -> None:
        if len(texts) != len(boxes):
            raise ValueError(f"{len(texts)} words but {len(boxes)} boxes")
        self._texts, self._boxes = texts, boxes

    def __len__(self) -> int:
        return len(self._texts)

    @overload
    def __getitem__(self, index: int) -> Word: ...
    @overload
    def __getitem__(self, index: slice) -> list[Word]: ...
    def __getitem__(self, index: int | slice) -> Word | list[Word]:
        if isinstance(index, slice):
            return [Word(text=t, bbox=tuple(b)) for t, b in  # type: ignore[arg-type]
                    zip(self._texts[index], self._boxes[index].tolist(), strict=True)]
        return Word(text=self._texts[index], bbox=tuple(self._boxes[index].tolist()))  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Word]:
        return iter(self[:])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


def unpack_words(stored: str | bytes, text: str) -> Sequence[Word]:
    """The words of a page from their stored form and the page text (:func:`pack_words`)."""
    if isinstance(stored, bytes):
        if not stored:
            return []
        coded = np.frombuffer(zlib.decompress(stored), dtype="<u2").reshape(4, -1).astype(np.int64)
        boxes = decode_boxes(coded)
    elif stored.startswith(PREFIX):
        raw = base64.b64decode(stored[len(PREFIX):])
        if not raw:
            return []
        boxes = np.frombuffer(raw, dtype="<u2").reshape(-1, 4)
    else:
        return [Word(text=t, bbox=tuple(b)) for t, b in json.loads(stored)]  # type: ignore[arg-type]
    return PageWords(text.split(" "), boxes / _SCALE)


def code_boxes(boxes: np.ndarray) -> np.ndarray:
    """(n, 4) integer boxes ``x0, y0, x1, y1`` -> (4, n) codes modulo 2^16: left edge from the previous
    right edge, width, top from the previous top, height from the previous height."""
    x0, y0, x1, y1 = boxes.T
    width, height = x1 - x0, y1 - y0
    return np.stack([x0 - _before(x1), width, y0 - _before(y0), height - _before(height)]) % 65536


def decode_boxes(coded: np.ndarray) -> np.ndarray:
    """The inverse of :func:`code_boxes`: (4, n) codes -> (n, 4) boxes."""
    gap, width, dy, dh = coded
    x0 = (np.cumsum(gap) + _before(np.cumsum(width))) % 65536  # x0[i] = sum(gap[:i+1]) + sum(width[:i])
    y0, height = np.cumsum(dy) % 65536, np.cumsum(dh) % 65536
    return np.stack([x0, y0, (x0 + width) % 65536, (y0 + height) % 65536], axis=1)


def _before(values: np.ndarray) -> np.ndarray:
    """Each element's predecessor (0 before the first)."""
    return np.concatenate([np.zeros(1, dtype=values.dtype), values[:-1]])
