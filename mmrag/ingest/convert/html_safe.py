"""HTML made safe to lay out: no scripts, no frames or objects, no remote or local references.

Everything that could make a renderer fetch or run something is dropped: ``script``/``iframe``/
``object``/``embed``/``link``/``meta``/``base`` elements, ``on*`` handlers, and every URL attribute
(``src``, ``href``, ``srcset``, ``poster``, ``background``, ``action``, ``data``) except inline
``data:`` images and in-page ``#anchors``; CSS loses ``@import`` and ``url(...)``. The text and the
structure (headings, lists, tables) stay.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

_DROP_WITH_CONTENT = frozenset({"script", "noscript", "iframe", "object", "embed", "frame", "frameset", "applet",
                                "template", "svg", "math", "video", "audio"})
_DROP_TAG = frozenset({"link", "meta", "base", "source", "track", "param", "form", "input", "button"})
_URL_ATTRS = frozenset({"src", "href", "srcset", "poster", "background", "action", "data", "formaction",
                        "xlink:href", "lowsrc", "dynsrc", "longdesc", "cite", "manifest", "ping"})
_VOID = frozenset({"br", "hr", "img", "col", "area", "wbr"})
_CSS_URL = re.compile(r"@import[^;]*;?|url\s*\([^)]*\)|expression\s*\(", re.IGNORECASE)


def _safe_attr(tag: str, name: str, value: str) -> bool:
    if name.startswith("on") or (name == "style" and "url" in value.lower()):
        return False
    if name in _URL_ATTRS:
        v = value.strip().lower()
        inline_image = tag == "img" and name == "src" and v.startswith("data:image/")
        return inline_image or (name == "href" and v.startswith("#"))
    return True


class _Sanitizer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.skip = 0  # depth inside a dropped element
        self.title: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP_WITH_CONTENT:
            self.skip += tag not in _VOID
            return
        self.in_title = tag == "title"
        if self.skip or tag in _DROP_TAG:
            return
        kept = "".join(f' {n}="{html.escape(v or "", quote=True)}"' for n, v in attrs if _safe_attr(tag, n, v or ""))
        self.out.append(f"<{tag}{kept}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in _DROP_WITH_CONTENT and tag not in _VOID:
            self.skip -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_WITH_CONTENT:
            self.skip = max(0, self.skip - 1)
            return
        self.in_title = False if tag == "title" else self.in_title
        if not self.skip and tag not in _DROP_TAG and tag not in _VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if not self.skip:
            self.out.append(_CSS_URL.sub("", data) if self.lasttag == "style" else data)

    def handle_entityref(self, name: str) -> None:
        self.handle_data(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.handle_data(f"&#{name};")


def sanitize_html(text: str) -> tuple[str, str | None]:
    """(safe HTML, the document's <title> if any)."""
    parser = _Sanitizer()
    parser.feed(text)
    parser.close()
    title = html.unescape("".join(parser.title)).strip() or None
    return "".join(parser.out), title
