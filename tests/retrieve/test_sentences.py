"""A query's sentences (long instructions kept from drowning the question, issue 19): real questions of
eval/suites/filings cut where a sentence ends or a colon introduces the question; abbreviations, decimals
and one-sentence questions left whole."""

from __future__ import annotations

import pytest

from mmrag.retrieve.sentences import query_sentences


def test_instructions_around_the_question_are_cut_into_sentences() -> None:  # ebay-28
    assert query_sentences(
        "I'm building a capital-return model. From eBay's FY2021 statement of cash flows, take repurchases of "
        "common stock and payments for dividends, add them, and give me the total returned to shareholders. "
        "Keep it short.") == [
        "I'm building a capital-return model.",
        "From eBay's FY2021 statement of cash flows, take repurchases of common stock and payments for dividends, "
        "add them, and give me the total returned to shareholders.",
        "Keep it short."]


def test_a_colon_introduces_the_question() -> None:  # mmm-15, crm-25
    assert query_sentences("You are a financial analyst. Using only the filing, answer concisely and show the "
                           "calculation: what was 3M's FY2018 capex?") == [
        "You are a financial analyst.", "Using only the filing, answer concisely and show the calculation:",
        "what was 3M's FY2018 capex?"]
    crm_25 = query_sentences("Summarise for a client note, in two bullet points and nothing else: what total and "
                             "current remaining performance obligation did Salesforce report?")
    assert crm_25[0].endswith("nothing else:") and crm_25[1].startswith("what total")


def test_a_question_then_what_to_give() -> None:  # ebay-09
    assert query_sentences("Did eBay make a profit in 2017? Give net income or loss from the income statement.") == [
        "Did eBay make a profit in 2017?", "Give net income or loss from the income statement."]


@pytest.mark.parametrize("text", [
    "What consideration did 3M pay for Acelity Inc. and its KCI subsidiaries in 2019, and how much debt did it assume?",
    "What provision for credit losses did JPMorgan Chase & Co. record for the quarter ended March 31, 2022, and why "
    "did the allowance increase?",
    "In Marc Benioff's January 2023 letter to employees, what will affected U.S. employees receive?",
    "MMM cash flow statement, fiscal 2015 - how much did the company pay in dividends to shareholders?",
    "Who was it, from Capital Safety Group S.A.R.L. Luxembourg, and was it $1.7 billion net of cash acquired?",
    "What did McDonald's report at the 10:30 a.m. Q2 call vs. Q2 2022 per Inc. No. 7 of the release?",
])
def test_one_sentence_stays_whole(text: str) -> None:
    assert query_sentences(text) == [text]


def test_fragments_join_their_neighbour_and_spaces_are_normalised() -> None:
    assert query_sentences("  Q3.  What were  net sales?  ") == ["Q3. What were net sales?"]
    assert query_sentences("") == [""]
