"""What a PDF page will cost to draw, read before drawing it (:mod:`mmrag.ingest.pdf_budget`)."""

from __future__ import annotations

import time

import pymupdf
import pytest

from mmrag.config import IngestConfig
from mmrag.errors import TooComplex
from mmrag.ingest.pdf_budget import check_pages, page_cost
from tests.conftest import CORPUS
from tests.jobs.hostile_pdfs import deflate_bomb, nested_xobjects, shared_stream


@pytest.mark.parametrize(("data", "limit"), [
    (nested_xobjects(12), "max_page_draws"), (shared_stream(8, 128), "max_page_content_bytes"),
    (deflate_bomb(1024), "max_page_content_bytes")], ids=["nested-4^12", "shared-128MiB", "deflate-1GiB"])
def test_bombs_are_refused_before_drawing(data, limit):
    doc = pymupdf.open("pdf", data)
    t0 = time.perf_counter()
    with pytest.raises(TooComplex) as caught:
        check_pages(doc, 1, doc.page_count, IngestConfig())
    assert caught.value.detail["limit"] == limit and f"MMRAG_INGEST__{limit.upper()}" in caught.value.message
    assert time.perf_counter() - t0 < 5.0  # reading, not drawing: 4**12 draws would take minutes


def test_counts_each_draw_of_a_form_and_its_bytes():
    doc = pymupdf.open("pdf", nested_xobjects(3, fanout=2))
    cost = page_cost(doc, 1, IngestConfig())
    assert cost.draws == 2 + 4 + 8  # the page draws X1 twice, each X1 draws X2 twice, ...
    small = IngestConfig(max_page_draws=13)
    with pytest.raises(TooComplex):
        check_pages(doc, 1, 1, small)
    check_pages(doc, 1, 1, IngestConfig(max_page_draws=14))


def test_real_documents_are_far_under_the_limits():
    config = IngestConfig()
    for path in sorted((CORPUS / "pdf").glob("*.pdf"))[:20]:
        with pymupdf.open(path) as doc:
            check_pages(doc, 1, doc.page_count, config)
