"""Evaluations and a corpus's own ranker in a real browser: a quick evaluation run twice with its table,
plots and the paired comparison; a ranker trained from a judgments file, then the default again."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from mmrag.rest_client import Client
from tests.web.conftest import TIMEOUT, go, image_width, no_console_errors, screenshot

pytestmark = pytest.mark.integration


def test_evaluation_quick_variant_table_plots_and_compare(browse, server):
    with Client(server.url, server.key) as client:
        before = len(client.call("GET", "/evaluations"))  # runs on the shared server before this test's
    page, console = browse()
    go(page, "evaluations")
    for runs in (1, 2):  # two runs to compare
        page.get_by_label("Suite").select_option("docling")
        page.get_by_label("Variant (optional)").fill("quick")
        page.get_by_role("button", name="Start").click()
        expect(page.get_by_role("button", name=re.compile("^Report of run"))).to_have_count(before + runs,
                                                                                            timeout=TIMEOUT)
        expect(page.locator("#eval-progress [data-state]")).to_have_attribute("data-state", "done")
        expect(page.locator(".report")).to_be_visible(timeout=TIMEOUT)
    report = page.locator(".report")
    expect(report).to_contain_text("Report: docling:quick")
    expect(report).to_contain_text("9 queries, 4 questions")
    ndcg = report.get_by_role("row", name="ndcg")
    cells = ndcg.locator("td").all_inner_texts()
    assert len(cells) == 4 and all(0.0 < float(c) <= 1.0 for c in cells), cells
    expect(report.get_by_role("row", name="anls")).to_be_visible()
    plots = report.locator(".plots img")
    assert plots.count() >= 2
    assert image_width(plots.first) > 100
    page.get_by_role("button", name="Compare").click()  # the two latest runs: this test's
    table = page.locator("#eval-compare table")
    expect(table.get_by_role("row", name="ndcg@5")).to_be_visible()
    rows = table.locator("tbody tr")
    deltas = rows.locator("td:nth-child(4)").all_inner_texts()  # th metric, td A, td B, td B - A, interval, p, n
    assert deltas and set(deltas) == {"0.000"}, deltas  # the same suite twice: identical metrics
    assert set(rows.locator("td:nth-child(5)").all_inner_texts()) == {"[0.000, 0.000]"}
    paired = set(rows.locator("td:nth-child(7)").all_inner_texts())
    assert "9" in paired and paired <= {"9", "4"}, paired  # 9 queries; answer metrics over the 4 questions
    expect(page.locator("#eval-compare")).to_contain_text("paired queries")
    screenshot(page, "evaluation")
    no_console_errors(console)


def _jsonl(questions: list[dict]) -> dict:
    return {"name": "judged.jsonl", "mimeType": "application/json",
            "buffer": "\n".join(json.dumps(q) for q in questions).encode()}


def test_the_corpus_trains_its_own_ranker_from_a_file_and_goes_back(browse, own_docs_corpus):
    page, console = browse(own_docs_corpus)
    go(page, "evaluations")
    form = page.locator("#ranker-form")
    expect(page.locator("#ranker-status [data-active]")).to_have_attribute("data-active", "shipped")
    expect(page.locator("#ranker-status")).to_contain_text("No training yet")
    page.get_by_label("Judgments file (JSON Lines)").set_input_files(
        {"name": "bad.jsonl", "mimeType": "application/json", "buffer": b'{"id": "a"}\nnot json'})
    form.get_by_role("button", name="Train").click()
    expect(form.locator(".error")).to_contain_text("line 2 is not JSON")
    console.expect(f"/corpora/{own_docs_corpus}/ranker")  # the 409 response itself
    unknown = [{"id": "a", "query": "pages", "judgments": {"elsewhere.pdf#1": 1}, "group": "x"},
               {"id": "b", "query": "text", "judgments": {"ocr_test.pdf#1": 1}, "group": "y"}]
    page.get_by_label("Judgments file (JSON Lines)").set_input_files(_jsonl(unknown))
    form.get_by_role("button", name="Train").click()
    expect(form.locator(".error")).to_contain_text("a: elsewhere.pdf#1")  # the server's message (409)
    questions = [{"id": f"m{p}", "query": f"page {p} of the multi page document",
                  "judgments": {f"multi_page.pdf#{p}": 2}, "group": "multi"} for p in (1, 2, 3)]
    questions += [{"id": f"o{i}", "query": q, "judgments": {"ocr_test.pdf#1": 2}, "group": "scans"}
                  for i, q in enumerate(["scanned text", "the OCR test page"])]
    page.get_by_label("Judgments file (JSON Lines)").set_input_files(_jsonl(questions))
    page.get_by_label("Install even where it does not win").check()
    form.get_by_role("button", name="Train").click()
    expect(page.locator("#ranker-status .job-progress")).to_have_attribute("data-state", "done", timeout=TIMEOUT)
    expect(page.locator("#ranker-status [data-active]")).to_have_attribute("data-active", "own")
    groups = page.locator("#ranker-status table tbody th").all_inner_texts()
    assert groups == ["multi", "scans"], groups
    expect(page.locator("#ranker-status")).to_contain_text("over 5 questions")
    expect(page.locator("#ranker-status")).to_contain_text("5/5 questions searched")
    screenshot(page, "ranker", publish=False)
    form.get_by_role("button", name="Back to the default ranker").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#ranker-status [data-active]")).to_have_attribute("data-active", "shipped")
    expect(form.get_by_role("button", name="Back to the default ranker")).to_be_hidden()
    no_console_errors(console)
