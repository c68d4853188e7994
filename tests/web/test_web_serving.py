"""The page itself in a real browser: its assets served with types and cache headers, the API key asked
for and kept in the session only, and the banner saying which spaces are on and what is off."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import no_console_errors

pytestmark = pytest.mark.integration


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


def test_the_key_is_kept_in_the_session_only_and_sent_on_every_request(browse, server):
    page, console = browse()
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


def test_the_banner_says_in_one_short_line_what_is_off_and_what_to_do(browse):
    page, console = browse()
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
    no_console_errors(console)


def test_the_banner_claims_only_the_spaces_that_can_serve(browse, server):
    """A machine where CLIP cannot load and no corpus uses it: the banner does not say clip is on."""
    page, console = browse()
    health = {"serving": ["text", "bm25", "document"], "pending": ["colpali"], "spaces": {},
              "off": {"clip": "open_clip:ViT-B-32: MaxRetryError"}, "unavailable": {"clip": HUB_ERROR}}
    page.evaluate("async (h) => (await import('/static/app.js')).renderHealth(h)", health)
    banner = page.locator("#health")
    expect(banner).to_contain_text("Spaces on: text, bm25, document. Not tried yet: colpali")
    assert "clip" not in banner.locator("span").first.inner_text()
    expect(banner.locator(".off-list > li")).to_have_count(1)
    expect(banner.locator(".off-list > li")).to_contain_text("clip is off: its model is not on this machine")
    real = httpx.get(server.url + "/health").json()  # this server's own health says it the same way
    assert real["serving"] == ["text", "bm25", "document"] and real["pending"] == []
    page.evaluate("async (h) => (await import('/static/app.js')).renderHealth(h)", real)
    expect(banner).to_contain_text("Spaces on: text, bm25, document.")
    no_console_errors(console)
