"""What the ranker reads of a page's text, packed as ingestion stores it: read back exactly, and a value of
another version or a damaged one reads as absent (the page's traits are then read from its text)."""

from __future__ import annotations

import struct
from pathlib import Path

import pymupdf
import pytest

from mmrag.spaces.page_traits import (
    TRAITS_VERSION,
    TextTraits,
    figure_share,
    pack_traits,
    statement_kinds,
    text_traits,
    unpack_traits,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not SHARED.exists():
    SHARED = Path("/work/shared/corpus")


def real_pages() -> list[str]:
    """Every page's text of a real quarterly report (cover, statements, notes, prose, exhibits)."""
    with pymupdf.open(SHARED / "sec-10q" / "pdf" / "2023 Q1 MSFT.pdf") as pdf:
        return [page.get_text() for page in pdf]


def test_every_page_of_a_real_report_reads_back_as_computed() -> None:
    texts = real_pages()
    traits = [text_traits(t, ["PART I. FINANCIAL INFORMATION", f"Item {i % 4}"]) for i, t in enumerate(texts)]
    assert {k for t in traits for k in t.kinds} >= {"income", "balance", "cash"}  # its statements are found
    assert any(t.note_head for t in traits) and any(t.figures > 0.2 for t in traits)
    for t in traits:
        assert unpack_traits(pack_traits(t)) == t
    empty = text_traits("")
    assert unpack_traits(pack_traits(empty)) == empty == TextTraits(0.0, frozenset(), False, 0, frozenset(),
                                                                    frozenset())


def test_a_value_of_another_version_or_damaged_reads_as_absent() -> None:
    packed = pack_traits(text_traits("Consolidated Balance Sheets (in millions) Total assets 1,234 5,678",
                                     ["Note 3", "Balance sheet"]))
    assert unpack_traits(packed) is not None
    assert unpack_traits(None) is None and unpack_traits(b"") is None
    assert unpack_traits(bytes([TRAITS_VERSION + 1]) + packed[1:]) is None
    assert unpack_traits(packed[:-1]) is None and unpack_traits(packed + b"\0") is None
    assert unpack_traits(packed[:5]) is None
    bad_kinds = bytearray(packed)
    bad_kinds[2] = 0xFF  # bits no statement has
    assert unpack_traits(bytes(bad_kinds)) is None
    huge = struct.pack("<BBBIdII", TRAITS_VERSION, 0, 0, 1, 0.0, 2**31, 2**31)  # counts far beyond the bytes
    assert unpack_traits(huge) is None


@pytest.mark.parametrize(("head", "kinds"), [
    ("Consolidated Statements of Comprehensive Income", {"comprehensive"}),
    ("Statements of Consolidated Cash Flows", {"cash"}),
    ("Consolidated Statements of Financial Position", {"balance"}),
    ("Management's discussion of results", set()),
])
def test_statement_titles(head: str, kinds: set[str]) -> None:
    assert statement_kinds(head) == kinds


def test_figure_share_counts_whole_words_that_are_numbers() -> None:
    assert figure_share(["Net", "sales", "$", "30,274", "(1,120)", "12.5%", "2015", "in", "millions", "4.10"]) \
        == pytest.approx(0.5)
    assert figure_share(["COVID-19", "10-K", "$5x"]) == 0.0 and figure_share([]) == 0.0
