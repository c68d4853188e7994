"""Browser fixtures: one real ``mmrag serve`` that requires API keys and one Debian chromium (driven
by PyPI playwright, never ``playwright install``) per module; the page asks for the key like it
would ask a person. Screenshots go to tests/web/artifacts/ and, with ``MMRAG_UPDATE_SCREENSHOTS=1``,
to docs/img/ (the README shows those)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from mmrag.keys import KeyStore
from tests.api.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_IMG = ROOT / "docs" / "img"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
WAIT_MS = 60_000  # the CI box is small and shared: wait for the server (generously), never sleep
expect.set_options(timeout=WAIT_MS)


@dataclass
class KeyedServer:
    server: Server
    key: str  # an admin key (the server requires keys even on loopback)

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedServer]:
    tmp = tmp_path_factory.mktemp("web")
    (tmp / "data").mkdir()
    store = KeyStore(tmp / "data")
    key = store.create("admin", None, "web page test").secret
    store.close()
    srv = Server(tmp / "data", tmp / "server.log", env={"MMRAG_API__AUTH": "required"})
    yield KeyedServer(srv, key)
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "Debian chromium is missing: apt-get install chromium (scripts/bootstrap does)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Console:
    """Console errors and uncaught exceptions of a page. The browser logs every 4xx response as a
    console error; ``expect`` allows one such for a request the test makes fail on purpose."""

    errors: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)

    def on_message(self, msg: ConsoleMessage) -> None:
        if msg.type != "error":
            return
        url = msg.location.get("url", "")
        expected = next((a for a in self.allowed if a in url), None)
        if msg.text.startswith("Failed to load resource") and expected is not None:
            self.allowed.remove(expected)
            return
        self.errors.append(f"{msg.text} ({url})")

    def expect(self, url_part: str) -> None:
        """The next resource error for a URL containing ``url_part`` is intended."""
        self.allowed.append(url_part)


def open_page(browser: Browser, server: KeyedServer, viewport: dict[str, int]) -> tuple[Page, Console]:
    """A new browser context (its own session storage) on the page; gives the key when asked."""
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    console = Console()
    console.expect("/corpora")  # the first requests answer 401: that is how the page learns it needs a key
    console.expect("/evaluations")
    page.on("console", console.on_message)
    page.on("pageerror", lambda exc: console.errors.append(f"uncaught: {exc}"))
    page.goto(server.url + "/")
    dialog = page.get_by_role("dialog", name="API key needed")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("an API key is required")  # the server's 401 message
    dialog.get_by_label("API key").fill(server.key)
    dialog.get_by_role("button", name="Use key").click()
    page.wait_for_selector("body[data-ready]")
    return page, console


@pytest.fixture(scope="module")
def desktop(browser: Browser, server: KeyedServer) -> Iterator[tuple[Page, Console]]:
    page, console = open_page(browser, server, DESKTOP)
    yield page, console
    page.context.close()


@pytest.fixture(scope="module")
def phone(browser: Browser, server: KeyedServer) -> Iterator[tuple[Page, Console]]:
    page, console = open_page(browser, server, PHONE)
    yield page, console
    page.context.close()


def screenshot(page: Page, name: str, *, publish: bool = True) -> Path:
    """Save ``artifacts/<name>.png``; with MMRAG_UPDATE_SCREENSHOTS=1 also ``docs/img/web-<name>.png``."""
    page.wait_for_function("() => [...document.images].filter(i => i.offsetParent)"  # a function: the page's
                           ".every(i => i.src && i.complete && i.naturalWidth > 0)")  # CSP forbids eval
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if publish and os.environ.get("MMRAG_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMG / f"web-{name}.png")
    return path
