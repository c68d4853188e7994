"""The page for everyone, in a real browser: no horizontal scroll at phone width, text contrast (WCAG
AA), a label on every control and the keyboard reaching the sections. These tests only read the shared
``docs_corpus``."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.conftest import PHONE, go, no_console_errors, screenshot

pytestmark = pytest.mark.integration

WIDE = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > 376 && !e.closest('.table-wrap')).slice(0, 5)
  .map(e => `${e.tagName}.${e.className}#${e.id}: ${e.textContent.slice(0, 40)}`)"""  # what is too wide


def test_phone_width_has_no_horizontal_scroll(browse, docs_corpus):
    page, console = browse(docs_corpus, viewport=PHONE)
    expect(page.get_by_label("Corpus", exact=True)).to_have_value(docs_corpus)
    for view in ("corpora", "documents", "search", "answer", "evaluations"):
        page.goto(page.url.split("#")[0] + f"#{view}")
        expect(page.locator(f"#view-{view}")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, (view, page.evaluate(WIDE))
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


def test_text_contrast_meets_wcag_aa(browse, docs_corpus):
    page, console = browse(docs_corpus)
    for view in ("search", "answer", "evaluations", "documents", "corpora"):
        go(page, view)
        assert page.evaluate(CONTRAST) == [], view
    no_console_errors(console)


def test_every_control_has_a_label_and_keyboard_reaches_the_sections(browse, docs_corpus):
    page, console = browse(docs_corpus)
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
