"""The web page in a real browser (Debian chromium via playwright) against a real ``mmrag serve``
with real documents: corpus, upload with live progress, search with highlighted evidence, a page
full size, a streamed (extractive) answer, an evaluation run with its table and plots, error states,
phone width, labels and keyboard. The tests run in order and share one server, browser and corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import Console, screenshot

pytestmark = pytest.mark.integration
CORPUS = "web-docs"
TIMEOUT = 120_000  # ms for server-side work (OCR, indexing, an evaluation run) on a busy 2-core box


def go(page: Page, view: str) -> None:
    page.get_by_role("navigation", name="Sections").get_by_role("link", name=view.capitalize()).click()
    expect(page.locator(f"#view-{view}")).to_be_visible()


def image_width(img: Locator) -> int:
    """Natural width of an <img> once its blob: URL (fetched with the API key) has loaded."""
    img.page.wait_for_function("i => i.src && i.complete && i.naturalWidth > 0", arg=img.element_handle())
    return int(img.evaluate("i => i.naturalWidth"))


def no_console_errors(console: Console) -> None:
    assert console.errors == [], console.errors


def test_page_and_assets_are_served_with_types_and_cache_headers(server):
    index = httpx.get(server.url + "/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in index.headers["content-security-policy"]
    script = httpx.get(server.url + "/static/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["cache-control"] == "no-cache"
    again = httpx.get(server.url + "/static/app.js", headers={"If-None-Match": script.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert httpx.get(server.url + "/static/style.css").headers["content-type"].startswith("text/css")
    missing = httpx.get(server.url + "/static/nope.js")
    assert missing.status_code == 404 and "app.js" in missing.json()["message"]
    assert httpx.get(server.url + "/static/..%2Fapi.py").status_code == 404
    assert httpx.get(server.url + "/corpora").status_code == 401  # the page is public, the data is not


def test_the_key_is_kept_in_the_session_only_and_sent_on_every_request(desktop, server):
    page, console = desktop
    assert page.evaluate("sessionStorage.getItem('mmrag.apiKey')") == server.key
    assert server.key not in page.evaluate("JSON.stringify(localStorage)")
    expect(page.get_by_role("button", name="API key")).to_be_visible()
    expect(page.locator("#health")).to_contain_text("Spaces on: text, bm25")
    no_console_errors(console)


HUB_ERROR = ("open_clip:ViT-B-32/laion2b_s34b_b79k: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
             "port=443): Max retries exceeded with url: /timm/vit_base_patch32_clip_224.laion2b/resolve/main/"
             "open_clip_model.safetensors\"), '(Request ID: 1234)')\nWe couldn't connect to "
             "'https://huggingface.co' to load this file, couldn't find it in the cached files and it looks like "
             "timm/vit_base_patch32_clip_224.laion2b is not the path to a directory containing a file named "
             "open_clip_model.safetensors.\nCheckout your internet connection or see how to run the library in "
             "offline mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.")


def test_the_banner_says_in_one_short_line_what_is_off_and_what_to_do(desktop):
    page, console = desktop
    lines = page.locator("#health .off-list > li")
    expect(lines.first).to_be_visible()
    texts = lines.all_inner_texts()
    assert any(t.startswith("vlm is off: turned off in the configuration") for t in texts), texts
    # a model that failed to load: one line saying what is off and what to set, the hub's reason folded away
    item = page.evaluate_handle("async (why) => (await import('/static/app.js')).offLine('clip', why)", HUB_ERROR)
    page.evaluate("(li) => document.querySelector('#health .off-list').append(li)", item)
    line = lines.last
    expect(line).to_contain_text("clip is off: its model is not on this machine and cannot be downloaded. "
                                 "Set MMRAG_EMBED__CLIP_MODEL to a local model folder")
    why = line.locator("details.why pre")
    expect(why).to_be_hidden()  # the full reason only on demand
    line.get_by_text("Why", exact=True).click()
    expect(why).to_have_text(HUB_ERROR)
    line.evaluate("li => li.remove()")  # the banner as the server made it, for the other tests' screenshots
    no_console_errors(console)


def test_empty_state_then_create_corpus(desktop):
    page, console = desktop
    expect(page.locator("#corpora-list")).to_contain_text("No corpus yet")
    page.get_by_label("Name").fill(CORPUS)
    expect(page.get_by_label("clip (images)")).to_be_disabled()  # no CLIP weights here: off, with the reason
    page.get_by_role("button", name="Create corpus").click()
    expect(page.locator("#corpus-form .form-status")).to_contain_text(f"Corpus {CORPUS} created", timeout=TIMEOUT)
    expect(page.get_by_role("row", name=CORPUS)).to_contain_text("text, bm25")
    expect(page.locator("#corpus-select")).to_have_value(CORPUS)
    screenshot(page, "corpora")
    console.expect("/corpora")  # the 409 response itself
    page.get_by_label("Name").fill(CORPUS)
    page.get_by_role("button", name="Create corpus").click()  # again: the server's message
    expect(page.locator("#corpus-form .error")).to_contain_text("409")
    expect(page.locator("#corpus-form .error")).to_contain_text(CORPUS)
    no_console_errors(console)


def test_upload_pdf_and_scan_shows_live_progress_until_done(desktop, corpus_dir: Path):
    page, console = desktop
    go(page, "documents")
    expect(page.locator("#documents-list")).to_contain_text("is empty")
    # Record every state the job box goes through: live updates, not just the end.
    page.evaluate("""() => { const seen = window.jobStates = [];
      new MutationObserver(() => { const s = document.querySelector('.job-progress')?.dataset.state;
        if (s && seen.at(-1) !== s) seen.push(s); })
        .observe(document.querySelector('#upload-jobs'), {subtree: true, childList: true, attributes: true}); }""")
    page.get_by_label("Choose files").set_input_files([corpus_dir / "pdf" / "multi_page.pdf",
                                                      corpus_dir / "scans" / "ocr_test.pdf"])
    expect(page.locator("#upload-chosen")).to_contain_text("2 files")
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".job-progress")).to_have_attribute("data-state", "done", timeout=TIMEOUT)
    states = page.evaluate("window.jobStates")
    assert states[-1] == "done" and len(states) >= 2, states  # queued/running seen before done
    files = page.locator(".job-file")
    expect(files).to_have_count(2)
    expect(files.nth(0)).to_contain_text("done · 5/5 pages")
    expect(files.nth(1)).to_contain_text("done · 1/1 pages")
    assert page.locator(".job-file progress").evaluate_all("els => els.map(e => e.value)") == [100, 100]
    expect(page.locator(".doc")).to_have_count(2)
    expect(page.locator("#documents-list")).to_contain_text("5 pages")
    page.get_by_role("button", name="Show pages of multi_page.pdf").click()
    page.get_by_role("button", name="Show pages of ocr_test.pdf").click()
    expect(page.locator(".doc-pages .thumb")).to_have_count(6)
    thumb = page.get_by_role("button", name="Open ocr_test.pdf, page 1 full size")
    assert image_width(thumb.locator("img")) == 256
    expect(page.locator(".doc", has_text="ocr_test.pdf").locator(".page-meta")).to_contain_text("ocr")  # Tesseract
    expect(page.get_by_role("button", name="Show pages of ocr_test.pdf")).to_have_attribute("aria-expanded", "true")
    screenshot(page, "upload")
    no_console_errors(console)


def test_bad_file_dropped_shows_the_servers_reason(desktop):
    page, console = desktop
    console.expect(f"/corpora/{CORPUS}/documents")  # the 415 response itself
    dropped = page.evaluate_handle("""() => { const dt = new DataTransfer();
      dt.items.add(new File([crypto.getRandomValues(new Uint8Array(2048))], 'x.pdf', {type: 'application/pdf'}));
      return dt; }""")  # random bytes named x.pdf, dropped on the drop zone
    page.locator("#drop-zone").dispatch_event("drop", {"dataTransfer": dropped})
    expect(page.locator("#upload-chosen")).to_contain_text("1 file: x.pdf")
    page.get_by_role("button", name="Upload").click()
    refused = page.locator(".rejected .error")
    expect(refused).to_contain_text("x.pdf was refused")
    expect(refused).to_contain_text("not a supported type")  # the server's message, verbatim
    expect(page.locator("#upload-form .error")).to_contain_text("Nothing was uploaded")
    screenshot(page, "upload-error", publish=False)
    expect(page.locator(".doc")).to_have_count(2)  # nothing else changed
    no_console_errors(console)


def test_search_shows_highlighted_thumbnails_and_scores(desktop):
    page, console = desktop
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
    page.get_by_label("bm25", exact=True).check()
    no_console_errors(console)


def test_open_a_page_full_size_with_highlights(desktop):
    page, console = desktop
    page.locator(".result .thumb").first.click()
    dialog = page.locator("#page-dialog")
    expect(dialog).to_be_visible()
    assert image_width(dialog.locator("img")) > image_width(page.locator(".result .thumb img").first) == 256
    assert dialog.locator(".box.hit").count() >= 2
    screenshot(page, "page", publish=False)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    no_console_errors(console)


def test_image_query_error_state_shows_the_servers_message(desktop, corpus_dir: Path):
    page, console = desktop
    expect(page.locator("#search-image-hint")).to_contain_text("no image space")
    console.expect(f"/corpora/{CORPUS}/search/image")
    page.get_by_label("Image query").set_input_files(corpus_dir / "scans" / "qr_bill_example.jpg")
    page.get_by_label("Query", exact=True).fill("")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-form .error")).to_contain_text("image queries need clip or colpali")
    page.get_by_role("button", name="Remove the image query").click()
    no_console_errors(console)


def test_answer_streams_with_citations_timings_and_extractive_note(desktop):
    page, console = desktop
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


def test_evaluation_quick_variant_table_plots_and_compare(desktop):
    page, console = desktop
    go(page, "evaluations")
    expect(page.locator("#eval-list")).to_contain_text("No evaluation yet")
    for runs in (1, 2):  # two runs to compare
        page.get_by_label("Suite").select_option("docling")
        page.get_by_label("Variant (optional)").fill("quick")
        page.get_by_role("button", name="Start").click()
        expect(page.get_by_role("button", name=re.compile("^Report of run"))).to_have_count(runs, timeout=TIMEOUT)
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
    page.get_by_role("button", name="Compare").click()
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


def test_the_corpus_trains_its_own_ranker_from_a_file_and_goes_back(desktop):
    page, console = desktop
    go(page, "evaluations")
    form = page.locator("#ranker-form")
    expect(page.locator("#ranker-status [data-active]")).to_have_attribute("data-active", "shipped")
    expect(page.locator("#ranker-status")).to_contain_text("No training yet")
    page.get_by_label("Judgments file (JSON Lines)").set_input_files(
        {"name": "bad.jsonl", "mimeType": "application/json", "buffer": b'{"id": "a"}\nnot json'})
    form.get_by_role("button", name="Train").click()
    expect(form.locator(".error")).to_contain_text("line 2 is not JSON")
    console.expect(f"/corpora/{CORPUS}/ranker")  # the 409 response itself
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


WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > 376 && !e.closest('.table-wrap')).slice(0, 5)
  .map(e => `${e.tagName}.${e.className}#${e.id}: ${e.textContent.slice(0, 40)}`)"""  # what is too wide


def test_phone_width_has_no_horizontal_scroll(phone):
    page, console = phone
    for view in ("corpora", "documents", "search", "answer", "evaluations"):
        page.goto(page.url.split("#")[0] + f"#{view}")
        expect(page.locator(f"#view-{view}")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, (view, page.evaluate(WIDE))
    page.get_by_label("Corpus", exact=True).select_option(CORPUS)
    page.goto(page.url.split("#")[0] + "#search")
    page.get_by_label("Query", exact=True).fill("typewriter patented")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".result .box.hit").first).to_be_attached()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    screenshot(page, "search-phone")
    page.goto(page.url.split("#")[0] + "#corpora")
    screenshot(page, "corpora-phone")
    no_console_errors(console)


CONTRAST = """() => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92
    : ((v + 0.055) / 1.055) ** 2.4; }).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
  return [...document.querySelectorAll('body *')].filter((e) => e.offsetParent && !e.closest('[disabled]')
      && [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
    .map((e) => { const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(background(e))];
      return [e.tagName + '.' + e.className + ': ' + e.textContent.trim().slice(0, 30),
              (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)]; })
    .filter(([, ratio]) => ratio < 4.5); }"""


def test_text_contrast_meets_wcag_aa(desktop):
    page, console = desktop
    for view in ("search", "answer", "evaluations", "documents", "corpora"):
        go(page, view)
        assert page.evaluate(CONTRAST) == [], view
    no_console_errors(console)


def test_every_control_has_a_label_and_keyboard_reaches_the_sections(desktop):
    page, console = desktop
    unlabeled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter(e => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                   && !(e.textContent || '').trim())
      .map(e => e.id || e.outerHTML.slice(0, 80))""")
    assert unlabeled == []
    page.reload()
    page.wait_for_selector("body[data-ready]")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    link = page.get_by_role("link", name="Answer")
    link.focus()
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"  # visible focus
    page.keyboard.press("Enter")
    expect(page.locator("#view-answer")).to_be_visible()
    assert page.evaluate("document.activeElement.id") == "h-answer"  # focus moves to the new section
    expect(link).to_have_attribute("aria-current", "page")
    no_console_errors(console)


def test_delete_asks_first_then_removes(desktop):
    page, console = desktop
    go(page, "documents")
    expect(page.locator(".doc")).to_have_count(2)
    page.get_by_role("button", name="Delete ocr_test.pdf").click()
    dialog = page.get_by_role("dialog", name="Delete ocr_test.pdf?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    expect(page.locator(".doc")).to_have_count(2)  # cancelled: nothing happened
    page.get_by_role("button", name="Delete ocr_test.pdf").click()
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator(".doc")).to_have_count(1)
    expect(page.locator("#documents-list")).not_to_contain_text("ocr_test.pdf")
    go(page, "corpora")
    page.get_by_role("button", name="Delete corpus eval-docling-quick").click()
    page.get_by_role("dialog", name="Delete corpus eval-docling-quick?").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("row", name="eval-docling-quick")).to_have_count(0)
    expect(page.get_by_role("row", name=CORPUS)).to_contain_text("5")  # the other corpus keeps its pages
    no_console_errors(console)


def test_cancel_an_upload_while_it_runs(desktop, corpus_dir: Path):
    page, console = desktop
    go(page, "documents")
    scans = sorted((p for p in (corpus_dir / "scans").iterdir() if p.name != "ocr_test.pdf"),
                   key=lambda p: p.stat().st_size)  # 7 files to OCR, small first: the big ones get cancelled
    page.get_by_label("Choose files").set_input_files(scans)
    page.get_by_role("button", name="Upload").click()
    job = page.locator(".job-progress").first
    cancel = job.get_by_role("button", name="Cancel")
    expect(cancel).to_be_visible()
    expect(job.locator(".job-file")).to_have_count(len(scans))
    expect(job.locator(".job-file.state-done").first).to_be_visible(timeout=TIMEOUT)
    screenshot(page, "upload-progress")  # a running job: files done, running, queued
    cancel.click()
    expect(job).to_have_attribute("data-state", "cancelled", timeout=TIMEOUT)
    expect(page.locator("#upload-form .form-status")).to_contain_text("Job cancelled")
    assert job.locator(".job-file.state-cancelled").count() >= 1
    no_console_errors(console)
