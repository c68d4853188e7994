"""A page's own prior (mmrag.retrieve.page_prior): on a real filing the segment note's table page overtakes
its prose page, which the fused search ranked first; the prior is bounded, reorders only the first
``depth`` candidates, leaves non-positive scores alone, and the real search applies it (shown by explain)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from mmrag.config import IngestConfig
from mmrag.ingest.parse import parse_pdf_batch
from mmrag.retrieve.page_prior import (
    FIGURE_CAP,
    LONG_DOCUMENT,
    PagePrior,
    page_factors,
    prior_factor,
    reprioritise,
    title_match,
)
from mmrag.retrieve_config import RankingConfig
from mmrag.spaces.bm25 import bm25_term_counts
from mmrag.spaces.page_traits import HEAD_WORDS, figure_share
from mmrag.store.base import Hit
from mmrag.types import SearchRequest
from tests.conftest import CORPUS

FILING = CORPUS.parent / "filings" / "pdf" / "3M_2016_10K.pdf"
PRIOR = PagePrior(title_weight=1.0, figure_weight=4.0, depth=30)  # the defaults (RankingConfig)


def hit(page_id: str, score: float, document_id: str = "doc") -> Hit:
    return Hit(id=page_id, score=score, payload={"page_id": page_id, "document_id": document_id})


def filing_words(first: int, last: int) -> dict[str, list[str]]:
    """Words of pages ``first..last`` of the 3M 2016 10-K as ingestion reads them (the real parse)."""
    assert FILING.exists(), f"missing shared filing {FILING}"
    pages = parse_pdf_batch(FILING.read_bytes(), "3m2016", IngestConfig(), first=first, last=last,
                            images=False).pages
    return {f"p{p.number}": [w.text for w in p.words] for p in pages}


def test_the_segment_table_overtakes_the_segment_notes_prose_on_a_real_filing() -> None:
    # filings suite mmm-08: "What operating income did 3M's Health Care business segment report in 2016?"
    # The fused search (text + BM25 + document stage) scored the note's prose page (p. 127) 16.97 and the
    # segment table (p. 128, where the answer is) 13.38.
    words = filing_words(127, 128)
    prose, table = figure_share(words["p127"]), figure_share(words["p128"])
    assert prose < 0.05 < 0.15 < table
    query = "What operating income did 3M's Health Care business segment report in 2016?"
    hits = [hit("p127", 16.97), hit("p128", 13.38)]
    pages = {"doc": pymupdf.open(FILING).page_count}  # a long report: its title regions count too
    ranked = reprioritise(hits, page_factors(hits, words, query, PRIOR, pages), PRIOR.depth)
    assert [h.id for h in ranked] == ["p128", "p127"]
    without = PagePrior(0.0, 0.0, 30)
    assert [h.id for h in reprioritise(hits, page_factors(hits, words, query, without), 30)] == ["p127", "p128"]


def test_figure_share_counts_amounts_percentages_and_years() -> None:
    assert figure_share(["Net", "sales", "$", "30,274", "(1,120)", "12.5%", "2015", "in", "millions", "4.10"]) \
        == pytest.approx(5 / 10)
    assert figure_share(["Risk", "factors", "COVID-19", "10-K"]) == 0.0
    assert figure_share([]) == 0.0


def test_title_match_reads_only_the_title_region_with_the_bm25_tokenizer() -> None:
    terms = bm25_term_counts("cash flow statement")
    title = ["Consolidated", "Statements", "of", "Cash", "Flows"]  # stemmed: statements ~ statement, flows ~ flow
    assert title_match(terms, title + ["x"] * 100) == pytest.approx(1.0)
    late = ["word"] * HEAD_WORDS + title  # the same words after the title region count for nothing
    assert title_match(terms, late) == 0.0
    assert title_match({}, title) == 0.0


def test_the_title_region_counts_only_in_a_long_report() -> None:
    words = {"a": ["Consolidated", "Statements", "of", "Cash", "Flows"] + ["text"] * 300}
    hits = [hit("a", 1.0, "d")]
    query, prior = "cash flow statement", PagePrior(title_weight=1.0, figure_weight=0.0, depth=30)
    assert page_factors(hits, words, query, prior, {"d": LONG_DOCUMENT}) == {"a": pytest.approx(2.0)}
    assert page_factors(hits, words, query, prior, {"d": LONG_DOCUMENT - 1}) == {"a": 1.0}
    assert page_factors(hits, words, query, prior) == {"a": 1.0}  # page count unknown: not a long report


def test_the_prior_is_bounded_and_reorders_only_the_first_candidates() -> None:
    prior = PagePrior(title_weight=1.0, figure_weight=4.0, depth=2)
    assert prior_factor(1.0, 1.0, prior) == pytest.approx(2.0 + 4.0 * FIGURE_CAP)  # bounded: 1 + t + f * cap
    assert prior_factor(1.0, FIGURE_CAP, prior) == prior_factor(1.0, 1.0, prior) and prior_factor(0, 0, prior) == 1
    words = {"a": ["text"] * 10, "b": ["1,000"] * 10, "c": ["2,000"] * 10}
    hits = [hit("a", 3.0), hit("b", 2.0), hit("c", 1.0)]
    factors = page_factors(hits, words, "revenue", prior)
    assert set(factors) == {"a", "b"}  # c is beyond the depth: no factor
    ranked = reprioritise(hits, factors, prior.depth)
    assert [h.id for h in ranked] == ["b", "a", "c"]
    assert ranked[0].score == pytest.approx(2.0 * (1.0 + 4.0 * FIGURE_CAP)) and ranked[2].score == 1.0
    negative = [hit("b", -1.0), hit("a", -2.0)]
    assert [h.score for h in reprioritise(negative, {"a": 3.0, "b": 3.0}, 2)] == [-1.0, -2.0]
    assert page_factors(hits, words, "revenue", PagePrior(0.0, 0.0, 2)) == {}
    assert page_factors(hits, words, "   ", prior) == {}


@pytest.fixture()
def segment_report(pipeline):
    doc = pymupdf.open()
    prose = ("Business Segments. The Health Care segment serves medical clinics and hospitals; its operating income "
             "grew in 2016 on higher sales of health care products, and the segment's operating income margin rose.")
    table = ("Business Segment Information. Health Care Net sales 2016 5,527 2015 5,420 2014 5,011 Operating income "
             "2016 1,754 2015 1,724 2014 1,609 Industrial Net sales 10,295 10,313 Operating income 2,311 2,289")
    for text in (prose, table):
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), text)
    pipeline.corpora.create_corpus("seg")
    pipeline.ingest.file_bytes("seg", doc.tobytes(), "report.pdf")
    return pipeline


def test_the_search_multiplies_each_candidate_by_its_page_prior(segment_report) -> None:
    query = "What operating income did the Health Care segment report in 2016?"
    retriever = segment_report.retriever
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(ranker="off")})  # the prior's order
    on = segment_report.search("seg", SearchRequest(query=query, top_k=5, explain=True)).evidence
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(ranker="off", page_prior_depth=0)})
    off = {e.page: e.score for e in segment_report.search("seg", SearchRequest(query=query, top_k=5)).evidence}
    factors = {e.page: e.scores["page_prior"] for e in on}
    assert factors[2] > factors[1] >= 1.0  # the table page holds figures, the prose page almost none
    for e in on:
        assert e.score == pytest.approx(off[e.page] * factors[e.page], rel=1e-3)
    assert [e.score for e in on] == sorted((e.score for e in on), reverse=True)
    assert Path(on[0].filename).name == "report.pdf"
