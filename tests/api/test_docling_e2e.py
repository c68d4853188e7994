"""End to end on the real docling corpus through a real uvicorn process (``mmrag serve``):
upload every PDF and scan over multipart, then search with phrases from the groundtruth
Markdown; the page that holds the phrase (found independently with PyMuPDF) must come back."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import pymupdf
import pytest

from tests.api.conftest import Server

pytestmark = pytest.mark.integration
WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def groundtruth_queries(corpus_dir) -> list[tuple[str, set[tuple[str, int]]]]:
    """(phrase, relevant (file, 1-based page) pairs): 8 words from paragraphs of each groundtruth
    file, kept when the phrase is on exactly one page of its PDF's text layer; every page of any
    PDF holding the phrase counts as relevant (some PDFs share pages)."""
    texts = {pdf.name: [_norm(p.get_text()) for p in pymupdf.open(pdf)] for pdf in (corpus_dir / "pdf").glob("*.pdf")}
    out = []
    for md in sorted((corpus_dir / "pdf-groundtruth").glob("*.md")):
        if f"{md.stem}.pdf" not in texts:
            continue
        paragraphs = [ln for ln in md.read_text().splitlines()
                      if len(ln.split()) >= 14 and not ln.lstrip().startswith(("#", "|", "!", "<", "`", "-"))]
        for para in paragraphs[:: max(1, len(paragraphs) // 3)][:3]:
            words = WORD.findall(para)
            phrase = " ".join(words[len(words) // 2 - 4: len(words) // 2 + 4])
            own = [i for i, text in enumerate(texts[f"{md.stem}.pdf"]) if _norm(phrase) in text]
            if len(own) == 1:
                relevant = {(name, i + 1) for name, pages in texts.items()
                            for i, text in enumerate(pages) if _norm(phrase) in text}
                out.append((phrase, relevant))
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory, corpus_dir):
    tmp = tmp_path_factory.mktemp("e2e")
    srv = Server(tmp / "data", tmp / "server.log")
    try:
        assert httpx.post(srv.url + "/corpora", json={"name": "docling"}, timeout=300).status_code == 201
        files = sorted((corpus_dir / "pdf").glob("*.pdf")) + sorted((corpus_dir / "scans").glob("*"))
        handles = [("files", (f.name, f.read_bytes())) for f in files]
        r = httpx.post(srv.url + "/corpora/docling/documents", files=handles, params={"wait": "true"}, timeout=900)
        assert r.status_code == 201, r.text
        assert not r.json()["errors"] and len(r.json()["documents"]) == len(files)
        srv.data_dir = tmp / "data"  # type: ignore[attr-defined]
        yield srv
    finally:
        srv.stop()


def _search(server, query, top_k=5, **extra):
    r = httpx.post(f"{server.url}/corpora/docling/search", json={"query": query, "top_k": top_k, **extra}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_groundtruth_phrases_find_their_page(server, corpus_dir):
    queries = groundtruth_queries(corpus_dir)
    assert len(queries) >= 20
    found = bm25_first = 0
    misses = []
    for phrase, relevant in queries:
        top = [(x["document"], x["page"]) for x in _search(server, phrase, top_k=3)]
        if relevant & set(top):
            found += 1
        else:
            misses.append((phrase, relevant, top))
        bm25 = _search(server, phrase, top_k=1, spaces=["bm25"])[0]
        bm25_first += (bm25["document"], bm25["page"]) in relevant
    # hybrid (MiniLM + BM25, DBSF) finds the page in its top 3; BM25 alone nails exact phrases
    assert found / len(queries) >= 0.85, misses
    assert bm25_first / len(queries) >= 0.9


@pytest.mark.parametrize("query,expected", [
    ("Docling bundles PDF document conversion to JSON and Markdown",
     {"ocr_test.pdf", "ocr_test_rotated_90.pdf", "ocr_test_rotated_180.pdf", "ocr_test_rotated_270.pdf",
      "nemotron_multipage.pdf"}),
    ("French Institute creates a French community", {"old_newspaper.png"}),
    ("payment slip Rutschmann Rorschach", {"qr_bill_example.jpg"}),
    ("Slerexe company telephone", {"sample_with_rotation_mismatch.pdf"}),
])
def test_scans_are_searchable(server, query, expected):
    results = _search(server, query, top_k=10)
    assert results[0]["document"] in expected
    if len(expected) > 1:  # every rotated copy was OCRed upright
        assert expected <= {x["document"] for x in results}


def test_cli_search_uses_running_server(server):
    """While `mmrag serve` owns the data folder, the CLI talks to it over REST."""
    env = {"MMRAG_DATA_DIR": str(server.data_dir), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "cli", "search", "locking nut load-carrying", "--corpus",
                          "docling", "--json", "-k", "3"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert results[0]["document"] == "amt_handbook_sample.pdf" and results[0]["page"] == 1
    assert {"document", "page", "score"} <= set(results[0])


def test_server_survives_bad_input_burst(server):
    for body in (b"", b"%PDF-garbage", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100):
        r = httpx.post(f"{server.url}/corpora/docling/documents", files=[("files", ("x.pdf", body))],
                       params={"wait": "true"}, timeout=60)
        assert 400 <= r.status_code < 500
    assert httpx.get(f"{server.url}/health").json()["status"] == "ok"
    assert _search(server, "word processor typewriter")[0]["document"] == "multi_page.pdf"
