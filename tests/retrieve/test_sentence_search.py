"""Sentences of a long query as sub-queries through the real search (MiniLM, BM25, document stage, the
embedded store): instructions around the question pull a page about a "capital-return model" first; the
sentence that names a period (``named``) puts the cash flow statement first, every sentence (``all``) lets
the instructions vote too; a one-sentence query is unchanged."""

from __future__ import annotations

import pymupdf
import pytest

from mmrag.retrieve_config import RankingConfig
from mmrag.types import SearchRequest

PAGES = [
    "Consolidated Statement of Cash Flows. Net cash provided by operating activities. Repurchases of common stock "
    "(3,000). Payments for dividends (600). Purchases of property and equipment.",
    "Capital return model. Our capital allocation model is a disciplined capital-return model; we are building a "
    "model of long-term value and keep it short and simple.",
    "Liquidity. We keep short-term investments short; it is important to keep the duration short and keep "
    "borrowings short-term.",
    "Employees. We had 11,000 employees at year end. Our culture values building teams.",
    "Risk factors. Competition in our markets is intense and we may not keep up.",
    "Dividends. In 2021 we paid cash dividends to holders of our common stock for the first time.",
    "Stock repurchase program. During 2021 we repurchased shares of our common stock under the program.",
]
QUESTION = ("I'm building a capital-return model. From eBay's FY2021 statement of cash flows, take repurchases of "
            "common stock and payments for dividends, add them, and give me the total returned to shareholders. "
            "Keep it short.")  # ebay-28 of eval/suites/filings


@pytest.fixture()
def report(pipeline):
    doc = pymupdf.open()
    for text in PAGES:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), text)
    pipeline.corpora.create_corpus("f")
    pipeline.ingest.file_bytes("f", doc.tobytes(), "report.pdf")
    return pipeline


def ranking(pipeline, mode: str, query: str) -> list[tuple[int, float]]:
    pipeline.retriever.config = pipeline.retriever.config.model_copy(  # the first stage alone: no prior, no ranker
        update={"sentence_queries": mode, "ranking": RankingConfig(page_prior_depth=0, ranker="off")})
    return [(e.page, e.score) for e in pipeline.search("f", SearchRequest(query=query, top_k=5)).evidence]


def test_the_sentence_that_names_the_period_finds_the_statement(report) -> None:
    assert ranking(report, "off", QUESTION)[0][0] == 2  # the whole query: the capital-return page first
    assert ranking(report, "named", QUESTION)[0][0] == 1  # whole query + the FY2021 sentence: the statement
    assert ranking(report, "all", QUESTION)[0][0] != 1  # the instructions vote too
    one = "How much did the company pay for repurchases of common stock in FY2021?"
    assert ranking(report, "named", one) == ranking(report, "off", one)
