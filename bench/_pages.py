"""Real page images for the benchmarks: the docling PDFs rendered with PyMuPDF (200 dpi: a letter
page is 1700 x 2200 px) plus the scanned photos of the shared corpus."""

from __future__ import annotations

import glob
from pathlib import Path

CORPUS = Path("/work/shared/corpus/docling")
SCANS = ("old_newspaper.png", "qr_bill_example.jpg")


def render_pages(dpi: int = 200, max_pages: int = 12, scans: bool = True) -> list[tuple[str, bytes]]:
    """PNG bytes of the first ``max_pages`` PDF pages at ``dpi`` (plus the scans); ``(label, bytes)``."""
    import pymupdf

    out: list[tuple[str, bytes]] = []
    for path in sorted(glob.glob(str(CORPUS / "pdf" / "*.pdf"))):
        with pymupdf.open(path) as doc:
            for page in doc:
                if len(out) >= max_pages:
                    break
                out.append((f"{Path(path).name} p{page.number + 1}", page.get_pixmap(dpi=dpi).tobytes("png")))
        if len(out) >= max_pages:
            break
    if scans:
        out.extend((name, (CORPUS / "scans" / name).read_bytes()) for name in SCANS)
    return out
