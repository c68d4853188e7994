"""``mmrag search`` with every option, in-process (no server running)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli import app
from cli.search_cmd import parse_pages, parse_weights
from mmrag.errors import InvalidInput
from mmrag.rest_client import search_body as rest_body
from mmrag.types import SearchRequest
from tests.retrieve.test_search_api import pdf_bytes, png


@pytest.fixture()
def data_dir(tmp_path, monkeypatch, minilm):
    from mmrag.pipeline import build_pipeline
    from tests.conftest import make_settings

    settings = make_settings(tmp_path / "data")
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    pipeline.corpora.create_corpus("docs")
    pipeline.ingest.file_bytes("docs", pdf_bytes("zebra stripes|flags of many nations|zebra crossing rules"), "a.pdf")
    pipeline.close()
    monkeypatch.setenv("MMRAG_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("MMRAG_EMBED__CLIP_MODEL", "")
    monkeypatch.setenv("MMRAG_EMBED__COLPALI_MODEL", "")
    return settings.data_dir


def test_search_with_options_prints_json(data_dir):
    r = CliRunner().invoke(app, ["search", "zebra", "-c", "docs", "--pages", "2-3", "--explain", "--json",
                                 "--weight", "bm25=2", "--rrf-k", "1", "--prefetch", "20", "--kind", "page", "-k", "5"])
    assert r.exit_code == 0, r.output
    results = json.loads(r.output)
    assert {x["page"] for x in results} == {2, 3} and set(results[0]["ranks"]) == {"text", "bm25"}


def test_search_errors_exit_2(data_dir, tmp_path):
    image = tmp_path / "q.png"
    image.write_bytes(png())
    r = CliRunner().invoke(app, ["search", "-c", "docs", "--image", str(image)])
    assert r.exit_code == 2 and "clip or colpali" in r.output
    r = CliRunner().invoke(app, ["search", "x", "-c", "docs", "--pages", "two"])
    assert r.exit_code == 2 and "--pages" in r.output


def test_option_parsers_and_rest_body():
    assert parse_pages("3") == (3, 3) and parse_pages("2-5") == (2, 5) and parse_pages(None) is None
    assert parse_weights(["text=2", "bm25=0.5"]) == {"text": 2.0, "bm25": 0.5}
    with pytest.raises(InvalidInput):
        parse_weights(["text"])
    body = rest_body(SearchRequest(query="q", image=b"\x89PNG", pages=(1, 2), rrf_k=5))
    assert body["pages"] == {"first": 1, "last": 2} and body["image_base64"] == "iVBORw==" and body["rrf_k"] == 5
