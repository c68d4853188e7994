"""The store payload of a page: its evidence kind follows the upload's kind."""

from __future__ import annotations

import pytest

from mmrag.jobs.embedding import page_payload
from mmrag.types import Document

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@pytest.mark.parametrize("media_type,kind", [
    ("application/pdf", "page"), (DOCX, "page"), ("text/html", "page"), ("message/rfc822", "page"),
    ("image/png", "image"), ("image/jpeg", "image"),
])
def test_converted_documents_have_pages_and_images_are_images(media_type, kind):
    doc = Document(id="d" * 32, filename="x", media_type=media_type, size_bytes=1, pages=[], metadata={"a": 1})
    payload = page_payload(doc, 2, "p" * 32)
    assert payload["kind"] == kind and payload["page"] == 2 and payload["meta"] == {"a": 1}
