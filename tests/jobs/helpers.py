"""Shared helpers of the job tests: corpora with unique bytes, bad files, counting points per page."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pymupdf


def unique_pdf(path: Path, tag: str) -> bytes:
    """The PDF's bytes plus a trailing comment: same pages, a different content hash."""
    return path.read_bytes() + f"\n% mmrag-copy {tag}\n".encode()


def encrypted_pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="x", owner_pw="x")


def text_pdf(text: str, pages: int = 1) -> bytes:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 72), f"{text}: this is page number {i + 1} of a generated test file")
    return doc.tobytes()


def points_per_page(store, corpus: str) -> Counter[tuple[str, int]]:
    """(document id, page) -> number of points in the store."""
    return Counter((h.payload["document_id"], h.payload["page"]) for h in store.scroll(corpus, limit=100_000))


def wait_until(predicate, timeout: float = 120.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"condition not met within {timeout}s")
