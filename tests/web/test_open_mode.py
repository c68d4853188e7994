"""The page on an open local server (``MMRAG_API__AUTH=auto`` on 127.0.0.1, no key): it works as before,
in Chromium; a form on another web origin posting an upload to the same server gets 401 (issue 21)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.api.conftest import Server
from tests.web.conftest import WAIT_MS

pytestmark = pytest.mark.integration
CORPUS = "open-docs"  # the corpus the other origin's form posts to
PAGE_CORPUS = "open-page"  # the one the page creates: neither test needs the other's


@pytest.fixture(scope="module")
def open_server(tmp_path_factory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("open-web")
    srv = Server(tmp / "data", tmp / "server.log", env={"MMRAG_API__AUTH": "auto"})
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def other_origin(open_server) -> Iterator[str]:
    """A page of another origin (another port of this machine) with a form that posts an upload to the server."""
    form = (f'<html><body><form id="f" method="post" enctype="multipart/form-data" '
            f'action="{open_server.url}/corpora/{CORPUS}/documents"><input type="file" name="files">'
            '<button type="submit">Send</button></form></body></html>').encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(form)

        def log_message(self, *args):
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{site.server_address[1]}/"
    site.shutdown()


def test_the_page_works_without_a_key_on_an_open_local_server(browser: Browser, open_server, corpus_dir: Path):
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(open_server.url + "/")
    page.wait_for_selector("body[data-ready]")
    expect(page.get_by_role("dialog", name="API key needed")).to_have_count(0)
    page.get_by_label("Name").fill(PAGE_CORPUS)
    page.get_by_role("button", name="Create corpus").click()  # a same-origin POST: allowed
    expect(page.locator("#corpus-form .form-status")).to_contain_text(f"Corpus {PAGE_CORPUS} created",
                                                                      timeout=120_000)
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Documents").click()
    page.get_by_label("Choose files").set_input_files([corpus_dir / "pdf" / "multi_page.pdf"])
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".job-progress")).to_have_attribute("data-state", "done", timeout=120_000)
    assert errors == []
    context.close()


def test_a_form_of_another_origin_cannot_post_to_the_open_server(browser: Browser, open_server, other_origin,
                                                                 corpus_dir: Path):
    httpx.post(f"{open_server.url}/corpora", json={"name": CORPUS}, timeout=120)  # exists (or is made now)
    before = httpx.get(f"{open_server.url}/corpora/{CORPUS}/documents", timeout=30).json()
    context = browser.new_context()
    page = context.new_page()
    page.goto(other_origin)
    page.set_input_files("input[type=file]", corpus_dir / "pdf" / "right_to_left_01.pdf")
    with page.expect_response(lambda r: r.url.startswith(open_server.url)) as answer:
        page.click("button[type=submit]")
    assert answer.value.status == 401
    context.close()
    assert httpx.get(f"{open_server.url}/corpora/{CORPUS}/documents", timeout=30).json() == before
