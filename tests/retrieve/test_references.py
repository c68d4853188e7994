"""What a question names by number (a page, a slide, a figure, a table) and what a page says of its own numbers."""

from __future__ import annotations

from mmrag.retrieve.references import (
    MAX_RANGE,
    QueryReferences,
    page_labels,
    page_references,
    query_references,
    reference_matches,
)


def test_a_question_names_pages_slides_figures_and_tables_by_number() -> None:
    got = query_references("According to the chart on page 14, what share of Table 3 is shown in Figure 2.1?")
    assert got == QueryReferences(pages=frozenset({14}), figures=frozenset({"2.1"}), tables=frozenset({"3"}),
                                  visual=True)
    assert query_references("What do slides 5-7 say?").pages == {5, 6, 7}
    assert query_references("see pp. 3 and 4").pages == {3, 4}
    assert query_references("Slide #12 title").pages == {12}
    assert query_references("Fig. 4 and figure 2-1").figures == {"4", "2.1"}  # 2-1 and 2.1 are one number
    assert query_references("Abb. 4 auf Seite 12").figures == {"4"}
    assert query_references("Abb. 4 auf Seite 12").pages == {12}
    assert query_references("第5页的图3").pages == {5} and query_references("第5页的图3").figures == {"3"}


def test_years_counts_ordinals_and_long_ranges_are_not_references() -> None:
    assert not query_references("In 2018, how many pages did the report have?").any
    assert query_references("Table 2018 of the appendix").tables == frozenset()  # a year, not a table
    ordinal = query_references("What does the second chart show?")
    assert not ordinal.any and ordinal.visual  # names a visual, by no number
    assert query_references(f"pages 3-{4 + MAX_RANGE}").pages == {3, 4 + MAX_RANGE}  # the ends only
    assert not query_references("What was the revenue growth?").visual


def labels(text: str) -> frozenset[int]:
    return page_labels(text.split())


def test_a_printed_page_label_stands_at_the_edges_of_the_page() -> None:
    assert labels("12 Annual Report 2018 Revenue grew") == {12}
    assert labels("Results by segment Issue 26 Copyright Huawei 48") == {48}
    assert labels("Results TABLE 4 Net sales 2018 - 12 -") == {12}
    assert labels("Page 9 of 40 Not Reported in A.3d") == {9}
    assert labels("Revenue grew 4 percent in 2019") == frozenset()  # a year is not a label
    assert labels("Net sales 1,234") == frozenset()  # an amount is not a label
    assert page_labels([]) == frozenset()


def test_a_caption_is_told_from_a_mention_in_prose() -> None:
    page = page_references("Figure 3: Revenue by segment. As shown in Table 2, sales rose. TABLE 4 Net sales by "
                           "region, see Fig. 5 for the trend")
    assert page.figure_captions == {"3"} and page.table_captions == {"4"}
    assert page.figure_mentions == {"3", "5"} and page.table_mentions == {"2", "4"}
    assert page.caption_text.split()[:4] == [":", "Revenue", "by", "segment."]
    assert page_references("") == page_references("   ")


def test_a_page_meets_the_reference_by_its_number_its_label_or_its_caption() -> None:
    page = page_references("Figure 3: Revenue by segment as shown in Table 2 48")  # printed label 48
    assert reference_matches(query_references("the chart on page 48"), page, 52) == (0.0, 1.0, 0.0, 0.0)
    assert reference_matches(query_references("the chart on page 52"), page, 52) == (1.0, 0.0, 0.0, 0.0)
    assert reference_matches(query_references("In Figure 3, which"), page, 52) == (0.0, 0.0, 1.0, 1.0)
    assert reference_matches(query_references("In Table 2, which"), page, 52) == (0.0, 0.0, 0.0, 1.0)
    assert reference_matches(query_references("In Table 3, which"), page, 52) == (0.0, 0.0, 0.0, 0.0)
    assert reference_matches(query_references("In Figure 2, which"), page, 52) == (0.0, 0.0, 0.0, 0.0)  # a table 2
