"""The ranker's features: what a page and a query say, read the same way at training and at search time."""

from __future__ import annotations

import numpy as np
import pytest

from mmrag.errors import InvalidInput
from mmrag.retrieve.rank_features import (
    ALL_FEATURES,
    CONTEXT_FEATURES,
    FEATURE_SETS,
    FEATURES,
    REFERENCE_FEATURES,
    CandidatePage,
    coverage,
    feature_matrix,
    page_traits,
    query_traits,
)
from mmrag.spaces.bm25 import bm25_term_counts
from mmrag.spaces.page_traits import statement_kinds

CASH_FLOWS = ("Table of Contents 3M Company and Subsidiaries Consolidated Statement of Cash Flows Years ended "
              "December 31 (Millions) 2018 2017 2016 Net income including noncontrolling interest 5,363 4,869 "
              "5,058 Purchases of property, plant and equipment (PP&E) (1,577) (1,373) (1,420)")
MDNA = ("Cash flows from investing activities. Capital spending went to growth, productivity and maintenance; "
        "the company expects capital expenditures of about 1.7 billion dollars next year across its businesses.")
CONTENTS = ("Index to Financial Statements Consolidated Statement of Income Consolidated Statement of Comprehensive "
            "Income Consolidated Balance Sheet Consolidated Statement of Changes in Equity Consolidated Statement "
            "of Cash Flows Notes to Consolidated Financial Statements")


def page(pid: str, words: str, rank: int | None, number: int, **scores: float) -> CandidatePage:
    return CandidatePage(page_id=pid, document_id="d", page=number, fused_rank=rank, fused=1.0 / (1 + (rank or 9)),
                         scores=dict(scores), doc_pages=100, traits=page_traits(words, extended=True))


def column(rows: np.ndarray, name: str) -> list[float]:
    return [float(v) for v in rows[:, FEATURES.index(name)]]


def test_statement_titles_are_read_from_the_page_head() -> None:
    assert statement_kinds(CASH_FLOWS) == {"cash"}
    assert statement_kinds("Consolidated Balance Sheets December 31 (in millions)") == {"balance"}
    assert statement_kinds("CONSOLIDATED STATEMENTS OF OPERATIONS (in thousands)") == {"income"}
    assert statement_kinds("Consolidated Statements of Comprehensive Income") == {"comprehensive"}
    assert statement_kinds("Consolidated Statements of Shareholders' Equity") == {"equity"}
    assert len(statement_kinds(CONTENTS)) == 5  # an index names every statement: its own feature tells it apart
    assert statement_kinds(MDNA) == frozenset()


def test_a_query_names_a_statement_or_a_line_item_that_lives_on_one() -> None:
    named = query_traits("What is the FY2018 capital expenditure amount for 3M? Use the cash flow statement.")
    assert named.statements == {"cash"} and "cash" in named.implied and named.amount
    implied = query_traits("What were Best Buy's merchandise inventories at the end of FY2019?")
    assert implied.statements == frozenset() and implied.implied == {"balance"}
    assert query_traits("In the debt footnote, what was total long-term debt?").note
    assert not query_traits("Who is the chief executive officer?").amount


def test_the_statement_page_meets_the_question_that_names_it_and_the_prose_page_does_not() -> None:
    candidates = [page("mdna", MDNA, 0, 30, text=0.6, bm25=9.0), page("cf", CASH_FLOWS, None, 60, text=0.4),
                  page("toc", CONTENTS, 5, 2, text=0.3, bm25=1.0)]
    rows = feature_matrix("What is the FY2018 capital expenditure of 3M per its cash flow statement?", candidates)
    assert rows.shape == (3, len(FEATURES)) and rows.dtype == np.float32
    assert column(rows, "named_statement") == [0.0, 1.0, 1.0]
    assert column(rows, "statement_kinds") == [0.0, 1.0, 5.0]
    assert column(rows, "bm25") == [1.0, 0.0, pytest.approx(1 / 9)]  # relative to the best candidate; absent 0
    assert column(rows, "dense_gap") == pytest.approx([0.0, 0.2, 0.3])
    fused_rank = column(rows, "fused_rank")
    assert fused_rank[0] < fused_rank[2] < fused_rank[1]  # a page added from a top document ranks after all
    figures = column(rows, "figures")
    assert figures[1] > 0.2 > 0.05 > figures[0]
    assert column(rows, "position") == pytest.approx([29 / 99, 59 / 99, 1 / 99])


def test_no_candidates_give_no_rows_and_a_page_without_text_gives_zeros() -> None:
    assert feature_matrix("revenue", []).shape == (0, len(FEATURES))
    rows = feature_matrix("revenue", [page("blank", "", 0, 1)])
    assert column(rows, "figures") == [0.0] and column(rows, "title") == [0.0] and column(rows, "words") == [0.0]


def test_the_page_the_question_names_by_number_label_or_caption_meets_it() -> None:
    candidates = [page("p52", "Figure 3: Revenue by segment in Q3 48", 0, 52, text=0.5),
                  page("p14", "Table 2. Staff by region, as Figure 3 shows 10", 1, 14, text=0.4),
                  page("prose", "Revenue rose in every segment", 2, 30, text=0.6)]
    rows = feature_matrix("What does Figure 3 on page 14 show about revenue?", candidates, ALL_FEATURES)
    assert rows.shape == (3, len(ALL_FEATURES))
    col = {name: [float(v) for v in rows[:, ALL_FEATURES.index(name)]] for name in REFERENCE_FEATURES}
    assert col["ref_asked"] == [1.0] * 3 and col["visual_asked"] == [1.0] * 3
    assert col["ref_page"] == [0.0, 1.0, 0.0] and col["ref_label"] == [0.0, 0.0, 0.0]
    assert col["ref_caption"] == [1.0, 0.0, 0.0] and col["ref_mention"] == [1.0, 1.0, 0.0]
    assert col["has_caption"] == [1.0, 1.0, 0.0]
    assert col["caption"][0] > 0 and col["caption"][2] == 0.0  # "revenue" in the caption's words
    labelled = feature_matrix("the chart on page 48", candidates, ALL_FEATURES)
    assert [float(v) for v in labelled[:, ALL_FEATURES.index("ref_label")]] == [1.0, 0.0, 0.0]
    assert not feature_matrix("What was revenue?", candidates, ALL_FEATURES)[:, ALL_FEATURES.index("ref_asked")].any()


def test_a_model_gets_the_columns_it_names_in_its_order() -> None:
    candidates = [page("a", "Figure 1: Sales 3", 0, 3, text=0.5, bm25=2.0)]
    full = feature_matrix("Figure 1 on page 3", candidates, ALL_FEATURES)
    assert np.array_equal(feature_matrix("Figure 1 on page 3", candidates), full[:, :len(FEATURES)])
    picked = feature_matrix("Figure 1 on page 3", candidates, ["ref_page", "bm25"])
    assert picked.tolist() == [[1.0, 1.0]]
    with pytest.raises(InvalidInput, match="unknown ranker features"):
        feature_matrix("x", candidates, ["nope"])
    unread = [CandidatePage("b", "d", 1, 0, traits=page_traits("Figure 1: Sales"))]  # the base model's traits
    assert unread[0].traits.refs is None and feature_matrix("Figure 1", unread).shape == (1, len(FEATURES))
    with pytest.raises(ValueError, match="without references"):
        feature_matrix("Figure 1", unread, ALL_FEATURES)


def context(rows: np.ndarray, name: str) -> list[float]:
    return [round(float(v), 6) for v in rows[:, FEATURE_SETS["context"].index(name)]]


def test_coverage_weights_each_question_term_by_its_rarity_among_the_candidates() -> None:
    present = np.array([[True, True, False], [True, False, False], [True, False, True], [True, False, False]])
    got = coverage(present)
    n, df = 4, np.array([4, 1, 1])
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))  # BM25's idf, the candidates the collection
    assert np.allclose(got, (present @ idf) / idf.sum())
    assert got[0] == got[2] > got[1] == got[3] > 0  # the term every page holds still counts, a little
    assert np.array_equal(coverage(np.zeros((2, 0), dtype=bool)), np.zeros(2))  # a question of stop words
    assert np.array_equal(coverage(np.zeros((2, 3), dtype=bool)), np.zeros(2))  # no page holds any term


def test_the_whole_page_is_read_for_the_question_terms_not_only_its_head() -> None:
    filler = " ".join(["lorem"] * 60)
    words = f"Annual review {filler} staff turnover fell in Norway"
    tail = page("tail", words, 0, 4, text=0.4, bm25=3.0)
    head = page("head", f"Staff turnover {filler}", 1, 9, text=0.5, bm25=2.0)
    other = page("other", f"Cash and equivalents {filler}", 2, 12, text=0.3)
    query = "How did staff turnover change in Norway?"
    rows = feature_matrix(query, [tail, head, other], FEATURE_SETS["context"])
    assert rows.shape == (3, len(FEATURE_SETS["context"]))
    cover = context(rows, "coverage")
    assert cover[0] == 1.0 and 0 < cover[1] < 1.0 and cover[2] == 0.0
    assert context(rows, "coverage_gap") == [0.0, round(1.0 - cover[1], 6), 1.0]
    assert column(rows, "title")[0] == 0.0  # its head holds none of them: only the whole page tells
    assert tail.traits.term_ids().tolist() == sorted(bm25_term_counts(words))


def test_a_page_reads_its_neighbours_scores_in_its_own_document_only() -> None:
    def at(pid: str, doc: str, number: int, fused: float, **scores: float) -> CandidatePage:
        return CandidatePage(page_id=pid, document_id=doc, page=number, fused_rank=0, fused=fused,
                             scores=dict(scores), doc_pages=20, traits=page_traits(pid, extended=True))

    candidates = [at("text", "a", 5, 1.0, text=0.8, bm25=10.0), at("figure", "a", 6, 0.2, text=0.3),
                  at("far", "a", 9, 0.5, text=0.5, bm25=5.0), at("other", "b", 4, 0.9, text=0.7, bm25=4.0)]
    rows = feature_matrix("q", candidates, CONTEXT_FEATURES)
    col = {name: [round(float(v), 6) for v in rows[:, i]] for i, name in enumerate(CONTEXT_FEATURES)}
    assert col["near_fused"] == [0.2, 1.0, 0.0, 0.0]  # relative to the best candidate's
    assert col["near_bm25"] == [0.0, 1.0, 0.0, 0.0]
    assert col["near_dense_gap"] == [0.5, 0.0, 1.0, 1.0]  # page 4 of document b is not page 4 of a


def test_the_context_features_need_the_pages_terms() -> None:
    unread = [CandidatePage("b", "d", 1, 0, traits=page_traits("Staff turnover"))]
    assert unread[0].traits.terms == b"" and not unread[0].traits.extended
    with pytest.raises(ValueError, match="without its terms"):
        feature_matrix("staff turnover", unread, FEATURE_SETS["context"])
    assert FEATURE_SETS["context"][:len(FEATURES)] == FEATURES and set(CONTEXT_FEATURES) <= set(ALL_FEATURES)
