"""The conversion subprocess for kinds MuPDF lays out itself: ``worker.py KIND IN OUT [PAGE_WIDTH]``.

Runs in the converter jail (:func:`mmrag.ingest.convert.sandbox.run_converter`), where nothing of
mmrag is installed: this file imports PyMuPDF and the standard library only, and the jail holds
just this file, the PyMuPDF package and the Python install. Text kinds arrive as safe HTML, made by
the service (:mod:`mmrag.ingest.convert.text_render`), and are laid out on Letter pages (or as wide
as ``PAGE_WIDTH`` points); EPUB/DOCX/PPTX/XLSX are opened by MuPDF's own readers. The result is
written as a PDF.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

MUPDF_KINDS = {"html": "html", "epub": "epub", "docx": "docx", "docm": "docx", "pptx": "pptx", "xlsx": "xlsx",
               "xlsm": "xlsx"}


def to_pdf(data: bytes, kind: str, width: float | None = None) -> bytes:
    page = pymupdf.paper_rect("letter")
    if width:
        page = pymupdf.Rect(0, 0, width, page.height)
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
    kind, src, dst, *width = argv
    Path(dst).write_bytes(to_pdf(Path(src).read_bytes(), kind, float(width[0]) if width else None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
