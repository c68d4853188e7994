"""Text kinds (Markdown, plain text, CSV/TSV, HTML) as safe HTML, ready for MuPDF's layout engine."""

from __future__ import annotations

import csv
import html
import io

from markdown_it import MarkdownIt

from mmrag.ingest.convert.html_safe import sanitize_html

PAGE_CSS = ("body{font-family:sans-serif;font-size:10pt;margin:0}table{border-collapse:collapse}"
            "td,th{border:1px solid #888;padding:2px 4px;vertical-align:top;font-size:9pt}th{background:#eee}"
            "pre,code{font-family:monospace;font-size:9pt;white-space:pre-wrap}")


def _page(body: str, title: str | None = None) -> str:
    head = f"<title>{html.escape(title)}</title>" if title else ""
    return f"<html><head>{head}<style>{PAGE_CSS}</style></head><body>{body}</body></html>"


def markdown_html(text: str) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    return _page(sanitize_html(md.render(text))[0])


def text_html(text: str) -> str:
    paras = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return _page("".join(f'<p style="white-space:pre-wrap">{html.escape(p)}</p>' for p in paras))


def csv_rows(text: str, kind: str) -> list[list[str]]:
    if kind == "tsv":
        delimiter = "\t"
    else:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    return [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in row)]


def csv_page_width(text: str, kind: str) -> float:
    """Page width (points) that fits the table's columns at 9 pt (Letter width at least, 4x at most)."""
    rows = csv_rows(text[:200_000], kind)
    widths = [0] * max((len(r) for r in rows), default=0)
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], min(len(cell), 40))
    return min(max(612.0, sum(w * 5.6 + 12 for w in widths) + 36), 2448.0)


def csv_html(text: str, kind: str) -> str:
    rows = csv_rows(text, kind)
    if not rows:
        return _page("")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
    return _page(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def safe_html(text: str) -> str:
    clean, title = sanitize_html(text)
    return _page(clean, title) if "<body" not in clean.lower() else clean.replace(
        "<head>", f"<head><style>{PAGE_CSS}</style>", 1)


def render_html(text: str, kind: str) -> str:
    """Safe HTML for a text kind (md, txt, csv, tsv, html)."""
    if kind == "md":
        return markdown_html(text)
    if kind in ("csv", "tsv"):
        return csv_html(text, kind)
    if kind == "html":
        return safe_html(text)
    return text_html(text)
