"""Page texts stored compressed: what is written reads back exactly, a BM25 variant costs a fraction of
a second copy, and the plain text of rows written before reads as it is."""

from __future__ import annotations

import zlib

from mmrag.catalog.text_codec import pack_text, pack_variant, unpack_text, unpack_variant

PAGE = " ".join(f"| Total net sales {i} | $ {82_959 + i:,} | $ {81_434 - i:,} | Café ✓" for i in range(40))
LABELLED = " ".join(f"| Total net sales {i} | Three Months Ended June 25, 2022: $ {82_959 + i:,} | "
                    f"Three Months Ended June 26, 2021: $ {81_434 - i:,} | Café ✓" for i in range(40))


def test_a_text_round_trips_and_is_smaller() -> None:
    for text in (PAGE, "", "é", "a\0b"):
        assert unpack_text(pack_text(text)) == text
    assert len(pack_text(PAGE)) * 3 < len(PAGE.encode())


def test_a_variant_round_trips_against_its_base_and_costs_less_than_alone() -> None:
    stored = pack_variant(LABELLED, PAGE)
    assert unpack_variant(stored, PAGE) == LABELLED
    assert len(stored) < len(zlib.compress(LABELLED.encode(), 9))
    assert unpack_variant(pack_variant("", PAGE), PAGE) == ""
    assert unpack_variant(pack_variant(LABELLED, ""), "") == LABELLED


def test_plain_rows_written_before_read_as_they_are() -> None:
    assert unpack_text("old text") == "old text"
    assert unpack_variant("old bm25 text", "old text") == "old bm25 text"
