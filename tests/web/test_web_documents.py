"""Corpora and documents in a real browser: the empty state and creating a corpus, an upload with live
progress, a refused file, deleting (asked first) and cancelling an upload while it runs. Each test works
in a corpus of its own (or a server of its own for the empty state)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from mmrag.rest_client import Client
from tests.web.conftest import TIMEOUT, go, image_width, new_corpus_name, no_console_errors, screenshot

pytestmark = pytest.mark.integration


def test_empty_state_then_create_corpus(browse, empty_server):
    page, console = browse(on=empty_server)
    expect(page.locator("#corpora-list")).to_contain_text("No corpus yet")
    go(page, "evaluations")
    expect(page.locator("#eval-list")).to_contain_text("No evaluation yet")
    go(page, "corpora")
    name = "web-docs"
    page.get_by_label("Name").fill(name)
    expect(page.get_by_label("clip (images)")).to_be_disabled()  # no CLIP weights here: off, with the reason
    page.get_by_role("button", name="Create corpus").click()
    expect(page.locator("#corpus-form .form-status")).to_contain_text(f"Corpus {name} created", timeout=TIMEOUT)
    expect(page.get_by_role("row", name=name)).to_contain_text("text, bm25")
    expect(page.locator("#corpus-select")).to_have_value(name)
    screenshot(page, "corpora")
    console.expect("/corpora")  # the 409 response itself
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create corpus").click()  # again: the server's message
    expect(page.locator("#corpus-form .error")).to_contain_text("409")
    expect(page.locator("#corpus-form .error")).to_contain_text(name)
    no_console_errors(console)


def test_upload_pdf_and_scan_shows_live_progress_until_done(browse, empty_corpus, corpus_dir: Path):
    page, console = browse(empty_corpus)
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


def test_bad_file_dropped_shows_the_servers_reason(browse, empty_corpus):
    page, console = browse(empty_corpus)
    go(page, "documents")
    expect(page.locator("#documents-list")).to_contain_text("is empty")
    console.expect(f"/corpora/{empty_corpus}/documents")  # the 415 response itself
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
    expect(page.locator(".doc")).to_have_count(0)  # nothing else changed: the corpus is still empty
    expect(page.locator("#documents-list")).to_contain_text("is empty")
    no_console_errors(console)


def test_delete_asks_first_then_removes(browse, server, own_docs_corpus):
    other = new_corpus_name("other")
    with Client(server.url, server.key) as client:
        client.create_corpus(other)  # a second corpus, to delete
    page, console = browse(own_docs_corpus)
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
    page.get_by_role("button", name=f"Delete corpus {other}").click()
    page.get_by_role("dialog", name=f"Delete corpus {other}?").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("row", name=other)).to_have_count(0)
    expect(page.get_by_role("row", name=own_docs_corpus)).to_contain_text("5")  # the other corpus keeps its pages
    no_console_errors(console)


def test_cancel_an_upload_while_it_runs(browse, empty_corpus, corpus_dir: Path):
    page, console = browse(empty_corpus)
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
