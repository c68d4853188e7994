"""Browser fixtures: one real ``mmrag serve`` that requires API keys and one Debian chromium (driven
by PyPI playwright, never ``playwright install``) for the whole session; the page asks for the key like
it would ask a person. No test depends on another: each opens its own browser context (its own storage)
and gets the corpus it needs from a fixture, made over REST (``docs_corpus`` is shared and only read;
``own_docs_corpus`` and ``empty_corpus`` are the test's own); a test that needs a server with nothing on
it gets ``empty_server``. Screenshots go to tests/web/artifacts/ and, with
``MMRAG_UPDATE_SCREENSHOTS=1``, to docs/img/ (the README shows those)."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Locator, Page, expect, sync_playwright

from mmrag.keys import KeyStore
from mmrag.rest_client import Client
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
TIMEOUT = 120_000  # ms for server-side work (OCR, indexing, an evaluation run) on a busy 2-core box
DOCS = ("multi_page.pdf", "ocr_test.pdf")  # under the test corpus's pdf/ and scans/: 5 pages and 1 scanned page
expect.set_options(timeout=WAIT_MS)


@dataclass
class KeyedServer:
    server: Server
    key: str  # an admin key (the server requires keys even on loopback)

    @property
    def url(self) -> str:
        return self.server.url


def start_keyed_server(tmp: Path) -> KeyedServer:
    (tmp / "data").mkdir()
    store = KeyStore(tmp / "data")
    key = store.create("admin", None, "web page test").secret
    store.close()
    return KeyedServer(Server(tmp / "data", tmp / "server.log", env={"MMRAG_API__AUTH": "required"}), key)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedServer]:
    """The server the web tests share; every test makes (or only reads) corpora of its own."""
    srv = start_keyed_server(tmp_path_factory.mktemp("web"))
    yield srv
    srv.server.stop()


@pytest.fixture
def empty_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedServer]:
    """A server of this test's own with nothing on it: no corpus, no evaluation."""
    srv = start_keyed_server(tmp_path_factory.mktemp("web-empty"))
    yield srv
    srv.server.stop()


def upload_docs(server: KeyedServer, corpus_dir: Path, corpus: str) -> str:
    """Create ``corpus`` over REST and index the two documents of ``DOCS`` in it (the upload waits for the job)."""
    files = [(name, (corpus_dir / sub / name).read_bytes()) for sub, name in zip(("pdf", "scans"), DOCS, strict=True)]
    with Client(server.url, server.key) as client:
        client.create_corpus(corpus)
        body = client.upload(corpus, files, wait=True)
    assert body["job"]["state"] == "done" and len(body["documents"]) == 2, body
    return corpus


def new_corpus_name(kind: str) -> str:
    """A corpus name of its own; no name is a part of another (the page's rows are found by name)."""
    return f"{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def docs_corpus(server: KeyedServer, corpus_dir: Path) -> str:
    """``web-docs``, holding the two documents of ``DOCS``: shared by the tests that only read it."""
    return upload_docs(server, corpus_dir, "web-docs")


@pytest.fixture
def own_docs_corpus(server: KeyedServer, corpus_dir: Path) -> str:
    """A corpus of this test's own holding the two documents of ``DOCS`` (for a test that changes it)."""
    return upload_docs(server, corpus_dir, new_corpus_name("own-docs"))


@pytest.fixture
def empty_corpus(server: KeyedServer) -> str:
    """A corpus of this test's own with no document."""
    name = new_corpus_name("empty")
    with Client(server.url, server.key) as client:
        client.create_corpus(name)
    return name


@pytest.fixture(scope="session")
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


def open_page(browser: Browser, server: KeyedServer, viewport: dict[str, int],
              corpus: str | None = None) -> tuple[Page, Console]:
    """A new browser context (its own session and local storage) on the page, ``corpus`` the chosen one
    (as the page remembers a person's choice); gives the key when asked."""
    context = browser.new_context(viewport=viewport)  # type: ignore[arg-type]
    context.set_default_timeout(WAIT_MS)
    if corpus is not None:
        context.add_init_script(f"localStorage.setItem('mmrag.corpus', {json.dumps(corpus)})")
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


Browse = Callable[..., tuple[Page, Console]]


@pytest.fixture
def browse(browser: Browser, server: KeyedServer) -> Iterator[Browse]:
    """``browse(corpus=None, viewport=DESKTOP, on=server)``: the page in a browser context of this test's
    own, closed after it."""
    pages: list[Page] = []

    def open_(corpus: str | None = None, viewport: dict[str, int] = DESKTOP,
              on: KeyedServer | None = None) -> tuple[Page, Console]:
        page, console = open_page(browser, on or server, viewport, corpus)
        pages.append(page)
        return page, console

    yield open_
    for page in pages:
        page.context.close()


def go(page: Page, view: str) -> None:
    page.get_by_role("navigation", name="Sections").get_by_role("link", name=view.capitalize()).click()
    expect(page.locator(f"#view-{view}")).to_be_visible()


def image_width(img: Locator) -> int:
    """Natural width of an <img> once its blob: URL (fetched with the API key) has loaded."""
    img.page.wait_for_function("i => i.src && i.complete && i.naturalWidth > 0", arg=img.element_handle())
    return int(img.evaluate("i => i.naturalWidth"))


def no_console_errors(console: Console) -> None:
    assert console.errors == [], console.errors


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
