"""The conversion subprocess for kinds MuPDF lays out itself: ``python -m mmrag.ingest.convert.worker
KIND IN OUT``. Runs under :func:`mmrag.ingest.convert.sandbox.run_limited` (limits, no network).

Text kinds become safe HTML first (:mod:`mmrag.ingest.convert.text_render`), laid out on Letter pages;
EPUB/DOCX/PPTX/XLSX are opened by MuPDF's own readers. The result is written as a PDF.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

from mmrag.ingest.convert.text_render import csv_page_width, render_html
from mmrag.ingest.sniff import decode_text

TEXT_KINDS = frozenset({"md", "txt", "csv", "tsv", "html"})
MUPDF_KINDS = {"epub": "epub", "docx": "docx", "docm": "docx", "pptx": "pptx", "xlsx": "xlsx", "xlsm": "xlsx"}


def to_pdf(data: bytes, kind: str) -> bytes:
    page = pymupdf.paper_rect("letter")
    if kind in TEXT_KINDS:
        text = decode_text(data)
        doc = pymupdf.open(stream=render_html(text, kind).encode(), filetype="html")
        if kind in ("csv", "tsv"):
            page = pymupdf.Rect(0, 0, csv_page_width(text, kind), page.height)
    else:
        doc = pymupdf.open(stream=data, filetype=MUPDF_KINDS[kind])
    try:
        if doc.is_reflowable:
            doc.layout(rect=page)
        pdf = pymupdf.open("pdf", doc.convert_to_pdf())
        pdf.set_metadata({k: v for k, v in (doc.metadata or {}).items() if k in ("title", "author") and v})
        return bytes(pdf.tobytes(garbage=1, deflate=True))
    finally:
        doc.close()


def main(argv: list[str]) -> int:
    kind, src, dst = argv
    Path(dst).write_bytes(to_pdf(Path(src).read_bytes(), kind))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
