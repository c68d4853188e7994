"""A PDF MuPDF cannot read, wherever the damage is met (opening it, its page tree, a page), fails as
``corrupt_document`` (422) saying what is wrong, never as ``internal_error`` (issue 28)."""

from __future__ import annotations

import pymupdf
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.embed.base import load_embedder
from mmrag.ingest.mupdf_errors import corrupt_document
from mmrag.pipeline import build_pipeline


def cyclic_pdf(good_pages: int) -> bytes:
    """``good_pages`` blank pages, then a page-tree node whose only kid is the root: a /Kids loop."""
    n = good_pages
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + i) for i in range(n + 1)), n + 1)]
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * n
    objs += [b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_the_cycle_is_real():
    with pymupdf.open("pdf", cyclic_pdf(0)) as doc, pytest.raises(Exception, match="cycle in page tree") as caught:
        doc.load_page(0)
    corrupt = corrupt_document(caught.value)
    assert corrupt is not None and corrupt.code == "corrupt_document" and "cycle in page tree" in corrupt.message
    assert corrupt_document(ValueError("a bug of ours")) is None


@pytest.fixture()
def client(settings):
    settings.embed.text_model = "fake:384"
    pipeline = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    with TestClient(create_app(settings, pipeline)) as c:
        assert c.post("/corpora", json={"name": "c"}).status_code == 201
        yield c
    pipeline.close()


@pytest.mark.parametrize("good_pages", [0, 7])  # the loop met while planning (first pages), or while parsing
def test_a_page_tree_with_a_cycle_is_a_corrupt_document(client, good_pages):
    r = client.post("/corpora/c/documents", files=[("files", ("loop.pdf", cyclic_pdf(good_pages)))],
                    params={"wait": "true"})
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["error"] == "corrupt_document" and "cycle in page tree" in error["message"], error
    assert "upload a valid PDF" in error["message"]
