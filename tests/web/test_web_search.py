"""Reading a corpus in a real browser: a search with highlighted evidence and per-space scores, a page
full size, an image query refused with the server's reason, and a streamed (extractive) answer. These
tests only read the shared ``docs_corpus``."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import TIMEOUT, go, image_width, no_console_errors, screenshot

pytestmark = pytest.mark.integration


def search(page: Page, query: str) -> None:
    go(page, "search")
    page.get_by_label("Query", exact=True).fill(query)
    page.get_by_role("button", name="Search", exact=True).click()


def test_search_shows_highlighted_thumbnails_and_scores(browse, docs_corpus):
    page, console = browse(docs_corpus)
    go(page, "search")
    page.get_by_label("Query", exact=True).fill("typewriter patented")
    page.get_by_text("Options: spaces, weights, filters").click()
    page.get_by_label("Show per-space scores (explain)").check()
    spaces = page.locator("#search-spaces input[type=checkbox]").evaluate_all("els => els.map(e => e.value)")
    assert spaces == ["text", "bm25", "document"]  # the corpus's spaces a request may name (OpenAPI SearchIn.spaces)
    page.get_by_role("button", name="Search", exact=True).click()
    first = page.locator(".result").first
    expect(first).to_contain_text("multi_page.pdf")
    expect(first).to_contain_text("page 1")
    expect(first.locator(".section")).to_have_text("Section: The Rise of Personal Computers (1980s)")  # its heading
    expect(first.locator("mark").first).to_be_visible()
    assert first.locator("mark").all_inner_texts()[0].lower().startswith(("typewriter", "patent"))
    marked = page.evaluate("async () => (await import('/static/pages.js')).matchingWords("
                           "'The typewriter was patented in the year', 'when was the typewriter patented')")
    assert marked == [False, True, False, True, False, False, False]  # stopwords of the query mark nothing
    hits = first.locator(".thumb .box.hit")
    assert hits.count() >= 2  # "typewriter" and "Patented" drawn from their word boxes
    frame, box = first.locator(".thumb .page-frame").bounding_box(), hits.first.bounding_box()
    assert frame and box and frame["x"] <= box["x"] < frame["x"] + frame["width"]
    assert frame["y"] <= box["y"] < frame["y"] + frame["height"]
    assert image_width(first.locator(".thumb img")) == 256
    first.get_by_text("Per-space scores").click()
    per_space, ranker = first.locator(".scores table").nth(0), first.locator(".scores table").nth(1)
    expect(per_space.get_by_role("row", name="text")).to_be_visible()
    expect(per_space.get_by_role("row", name="bm25")).to_be_visible()
    expect(ranker.get_by_role("row").first).to_be_visible()  # what each feature added to the learned ranker's score
    assert ranker.locator("th").first.inner_text() == "Ranker feature"
    screenshot(page, "search")
    page.get_by_label("bm25", exact=True).uncheck()  # one space only: the request names it
    page.get_by_role("button", name="Search", exact=True).click()
    first.get_by_text("Per-space scores").click()
    expect(per_space.get_by_role("row", name="text")).to_be_visible()
    expect(per_space.get_by_role("row", name="bm25")).to_have_count(0)
    no_console_errors(console)


def test_open_a_page_full_size_with_highlights(browse, docs_corpus):
    page, console = browse(docs_corpus)
    search(page, "typewriter patented")
    expect(page.locator(".result .thumb .box.hit").first).to_be_attached()
    page.locator(".result .thumb").first.click()
    dialog = page.locator("#page-dialog")
    expect(dialog).to_be_visible()
    assert image_width(dialog.locator("img")) > image_width(page.locator(".result .thumb img").first) == 256
    assert dialog.locator(".box.hit").count() >= 2
    screenshot(page, "page", publish=False)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    no_console_errors(console)


def test_image_query_error_state_shows_the_servers_message(browse, docs_corpus, corpus_dir: Path):
    page, console = browse(docs_corpus)
    go(page, "search")
    expect(page.locator("#search-image-hint")).to_contain_text("no image space")
    console.expect(f"/corpora/{docs_corpus}/search/image")
    page.get_by_label("Image query").set_input_files(corpus_dir / "scans" / "qr_bill_example.jpg")
    page.get_by_label("Query", exact=True).fill("")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-form .error")).to_contain_text("image queries need clip or colpali")
    page.get_by_role("button", name="Remove the image query").click()
    no_console_errors(console)


def test_answer_streams_with_citations_timings_and_extractive_note(browse, docs_corpus):
    page, console = browse(docs_corpus)
    go(page, "answer")
    page.get_by_label("Question").fill("When was the typewriter patented?")
    page.get_by_role("button", name="Ask").click()
    done = page.locator(".answer-done")
    expect(done).to_have_attribute("data-mode", "extractive", timeout=TIMEOUT)
    expect(page.locator(".answer-text")).to_contain_text("1868")
    expect(page.locator(".answer-text")).to_have_attribute("aria-busy", "false")
    note = page.locator(".answer .note")
    expect(note).to_contain_text("Extractive answer")
    expect(note).to_contain_text("vlm.backend = none")  # the reason, from the server
    expect(page.locator(".evidence")).to_contain_text("Evidence sent")
    expect(done.get_by_role("button", name="multi_page.pdf, page 1").first).to_be_visible()
    expect(done.get_by_role("row", name="retrieve")).to_be_visible()
    screenshot(page, "answer")
    done.locator(".thumb").first.click()
    expect(page.locator("#page-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    no_console_errors(console)
