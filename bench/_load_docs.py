"""Documents and queries of the load test (bench/load.py seeds with them, bench/locustfile.py sends them)."""

from __future__ import annotations

import pymupdf

QUERIES = ["lighthouse keeper logbook", "tidal schedule of the harbour", "storm warnings at night",
           "fog horn maintenance", "ships passing the cape"]


def small_pdf(n: int) -> bytes:
    """A one-page PDF, different for every ``n`` (so every upload is a new document)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), f"Document {n}: the {QUERIES[n % len(QUERIES)]}.")
    return bytes(doc.tobytes())
