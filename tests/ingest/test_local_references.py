"""Nothing on the server's disk leaks into a corpus (issue 21): crafted RTF, DOC, DOCX, ODT, HTML,
Markdown, EPUB and EML files name a local file by every means we know (fields, linked images, OLE
links, sub-documents, chunks, linked sections, ``file://``, absolute and relative paths). Over REST
each is refused with a clear 400 or ingested without any of the referenced bytes; converted directly
(the refusal bypassed) the jail alone keeps them out."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from api.app import create_app
from mmrag.config import IngestConfig
from mmrag.errors import MMRAGError
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.sniff import sniff_kind
from mmrag.pipeline import build_pipeline
from tests.ingest.local_refs import MARKER, Markers, all_attacks, filename, odt_attacks, plant_markers

CFG = IngestConfig()


@pytest.fixture(scope="module")
def markers(tmp_path_factory) -> Markers:
    return plant_markers(tmp_path_factory.mktemp("bait"))


@pytest.fixture(scope="module")
def attacks(markers, tmp_path_factory) -> dict[str, bytes]:
    """Every crafted upload, plus a DOC holding an INCLUDEPICTURE field code (LibreOffice writes a linked
    picture of an ODT that way; made while the bait is absent, so the DOC holds only the path)."""
    out = all_attacks(markers)
    work = tmp_path_factory.mktemp("doc")
    absent = Markers(*(work / "later" / p.name for p in (markers.png, markers.svg, markers.txt, markers.html)))
    (work / "linked.odt").write_bytes(odt_attacks(absent)["odt-linked-image-absolute"])
    subprocess.run([shutil.which("soffice") or "soffice", f"-env:UserInstallation={(work / 'p').as_uri()}",
                    "--headless", "--convert-to", "doc", "--outdir", str(work), str(work / "linked.odt")],
                   capture_output=True, timeout=180, check=True)
    doc = (work / "linked.doc").read_bytes()
    assert "INCLUDEPICTURE".encode("utf-16-le") in doc
    plant_markers(work / "later")  # the bait appears where the DOC points
    out["doc-includepicture"] = doc
    return out


def leaked(pdf_or_png: bytes) -> list[str]:
    """What of the bait is in a PDF's text and pixels, or in a page image's pixels."""
    found = []
    if pdf_or_png.startswith(b"%PDF"):
        with pymupdf.open("pdf", pdf_or_png) as doc:
            text = re.sub(r"\s", "", "".join(p.get_text() for p in doc))
            pixmaps = [Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
                       for pix in (p.get_pixmap(dpi=36) for p in doc)]
        if MARKER[:8] in text:
            found.append("marker text")
    else:
        pixmaps = [Image.open(io.BytesIO(pdf_or_png)).convert("RGB")]
    for img in pixmaps:
        rgb = np.asarray(img).astype(int)
        if int(((rgb[..., 0] > 240) & (rgb[..., 1] < 30) & (rgb[..., 2] > 240)).sum()) > 20:
            found.append("marker pixels")
    return found


def test_the_bait_would_be_seen(markers):
    """The detector works: the marker image and an SVG's text, put into a PDF on purpose, are found."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(pymupdf.Rect(72, 72, 372, 272), filename=str(markers.png))
    page.insert_text((72, 320), MARKER)
    assert leaked(doc.tobytes()) == ["marker text", "marker pixels"]


def test_the_jail_alone_keeps_every_local_file_out(attacks):
    """Each crafted file converted directly (no up-front refusal): none of the bait is in the PDF."""
    results = {}
    for case, data in sorted(attacks.items()):
        kind = sniff_kind(data, filename(case)).name
        try:
            results[case] = leaked(convert_to_pdf(data, kind, CFG))
        except MMRAGError as exc:  # a converter may fail on a crafted file: that includes nothing either
            results[case] = [] if exc.code in ("corrupt_document",) else [f"error {exc.code}: {exc.message}"]
    assert {c: r for c, r in results.items() if r} == {}
    assert len(results) >= 24


@pytest.fixture(scope="module")
def client(minilm, tmp_path_factory):
    from tests.conftest import make_settings

    settings = make_settings(tmp_path_factory.mktemp("refs") / "data")
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    with TestClient(create_app(settings, pipeline)) as c:
        assert c.post("/corpora", json={"name": "docs", "config": {"spaces": ["bm25", "text"]}}).status_code == 201
        yield c
    pipeline.close()


def test_over_rest_each_is_refused_clearly_or_brings_in_nothing(client, attacks):
    outcome: dict[str, int] = {}
    for case, data in sorted(attacks.items()):
        r = client.post("/corpora/docs/documents", files=[("files", (filename(case), data))],
                        params={"wait": "true"})
        outcome[case] = r.status_code
        assert r.status_code in (200, 201, 400), (case, r.text)
        for error in r.json()["errors"]:  # refused up front, or in the job (an email's attachment)
            assert error["error"] == "invalid_input" and "includes another file" in error["message"], (case, error)
    assert outcome["rtf-includepicture-png"] == 400 and outcome["html-every-reference"] == 201
    assert outcome["docx-linked-image"] == 201  # a picture linked to a file is ingested, the link dead
    hits = client.post("/corpora/docs/search", json={"query": MARKER, "spaces": ["bm25"]}).json()["results"]
    assert hits == []
    for doc in client.get("/corpora/docs/documents").json():
        for page in client.get(f"/corpora/docs/documents/{doc['id']}").json()["pages"]:
            png = client.get(f"/corpora/docs/pages/{page['id']}/image").content
            assert leaked(png) == [], (doc["filename"], page["number"])
    texts = client.app.state.pipeline.catalog.pages.texts("docs")
    assert texts and not any(MARKER[:8] in re.sub(r"\s", "", t.text) for t in texts)
