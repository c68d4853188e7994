"""What a valid file part of an upload looks like, which a JSON schema cannot say (its bytes are judged by
content): schemathesis draws the upload's ``files`` from real documents of the media types the OpenAPI
document names for that part (``encoding.files.contentType``). Loaded through SCHEMATHESIS_HOOKS by
tests/api/test_contract.py. Nothing here excuses a response: every check stays on."""

from __future__ import annotations

import io

import pymupdf
import schemathesis
from hypothesis import strategies as st
from PIL import Image


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    return bytes(doc.tobytes())


def _png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (96, 64), (shade, 200, 255 - shade)).save(buf, format="PNG")
    return buf.getvalue()


WORDS = st.lists(st.sampled_from(["contract", "testing", "generated", "requests", "heron", "ledger", "42"]),
                 min_size=1, max_size=30).map(lambda w: " ".join(w).encode())

schemathesis.openapi.media_type("application/pdf", st.sampled_from([_pdf("Generated contract document"),
                                                                     _pdf("Another page of text 7")]))
schemathesis.openapi.media_type("image/png", st.sampled_from([_png(10), _png(200)]))
schemathesis.openapi.media_type("text/plain", WORDS)
