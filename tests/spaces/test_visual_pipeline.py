"""Visual spaces end to end on tiny random-weight real architectures (open_clip CLIP and
transformers' ColQwen2): indexing, image queries (upload and page reference), filters,
explain. Random weights: this checks plumbing, not retrieval quality, except where an
identical image must find itself."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from mmrag.embed.base import EmbedderOptions, load_embedder
from mmrag.errors import InvalidInput, NotFound
from mmrag.types import EvidenceKind, SearchRequest
from tests.fixtures.tiny_models import build_tiny_hf_colqwen2, build_tiny_open_clip


def png(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def visual(tmp_path_factory, minilm, corpus_dir):
    from mmrag.pipeline import build_pipeline
    from tests.conftest import make_settings

    root = tmp_path_factory.mktemp("visual")
    options = EmbedderOptions(device="cpu")
    clip = load_embedder(f"open_clip:local-dir:{build_tiny_open_clip(root / 'clip') / 'local'}", options)
    colpali = load_embedder(f"hf:{build_tiny_hf_colqwen2(root / 'colqwen')}", options)
    embedders = {"text": minilm, "clip": clip, "colpali": colpali}
    pipeline = build_pipeline(make_settings(root / "data"), embedders=embedders)
    pipeline.corpora.create_corpus("v")
    pdf = pipeline.ingest.path("v", corpus_dir / "pdf" / "multi_page.pdf", {"team": "red"})
    image = pipeline.ingest.file_bytes("v", png(1), "photo.png", {"team": "blue"}).document
    pipeline.ingest.file_bytes("v", png(2), "other.png", {"team": "blue"})
    yield pipeline, pdf, image
    pipeline.close()


def test_collection_has_full_and_pooled_colpali_vectors(visual):
    pipeline, pdf, _ = visual
    names = {s.name: s for s in pipeline.corpora.collection_spec(pipeline.catalog.corpora.config("v")).spaces}
    assert names["colpali"].kind == "multivector" and not names["colpali"].index
    assert names["colpali_mean"].kind == "dense" and names["clip"].kind == "dense"
    hits = pipeline.store.scroll("v")
    assert len(hits) == pdf.page_count + 2


@pytest.mark.parametrize("space", ["clip", "colpali"])
def test_uploaded_image_finds_itself(visual, space):
    pipeline, _, image = visual
    result = pipeline.search("v", SearchRequest(image=png(1), spaces=[space], top_k=3))
    assert result.evidence[0].document_id == image.id and result.evidence[0].kind is EvidenceKind.IMAGE


@pytest.mark.parametrize("space", ["clip", "colpali"])
def test_page_reference_finds_that_page(visual, space):
    pipeline, pdf, _ = visual
    page = pipeline.catalog.pages.of_document("v", pdf.id)[2]
    result = pipeline.search("v", SearchRequest(image_page_id=page.id, spaces=[space], top_k=3))
    assert result.evidence[0].page_id == page.id


def test_text_and_image_query_explains_every_space(visual):
    pipeline, _, _ = visual
    result = pipeline.search("v", SearchRequest(query="typewriter invention", image=png(2), top_k=4, explain=True))
    assert len({e.page_id for e in result.evidence}) == len(result.evidence) == 4  # merged: one item per page
    ranks = set().union(*(e.ranks for e in result.evidence))
    assert {"text", "bm25", "clip", "colpali", "colpali_maxsim"} <= ranks
    scored = [e for e in result.evidence if "colpali_maxsim" in e.scores]
    assert scored and all(np.isclose(e.score, e.scores["colpali_maxsim"], atol=1e-4) for e in scored)


def test_filters_kinds_pages_metadata(visual):
    pipeline, pdf, _ = visual
    images = pipeline.search("v", SearchRequest(query="typewriter", kinds=["image"], top_k=10))
    assert images.evidence and {e.kind for e in images.evidence} == {EvidenceKind.IMAGE}
    pages = pipeline.search("v", SearchRequest(query="word processor", pages=(2, 3), top_k=10))
    assert {(e.document_id, e.page) for e in pages.evidence} == {(pdf.id, 2), (pdf.id, 3)}
    red = pipeline.search("v", SearchRequest(image=png(2), metadata={"team": "red"}, top_k=10, prefetch_limit=50))
    assert red.evidence and {e.document_id for e in red.evidence} == {pdf.id}


@pytest.mark.parametrize("request_,error,match", [
    (SearchRequest(query="x", prefetch_limit=3, top_k=5), InvalidInput, "prefetch_limit"),
    (SearchRequest(query="x", pages=(4, 2)), InvalidInput, "pages"),
    (SearchRequest(query="x", kinds=["video"]), InvalidInput, "kinds"),
    (SearchRequest(query="x", rrf_k=0), InvalidInput, "rrf_k"),
    (SearchRequest(image=png(1), image_page_id="ab"), InvalidInput, "not both"),
    (SearchRequest(image_page_id="abcdef"), NotFound, "unknown page"),
    (SearchRequest(image=png(1), spaces=["text", "bm25"]), InvalidInput, "image queries need clip or colpali"),
])
def test_bad_visual_requests(visual, request_, error, match):
    with pytest.raises(error, match=match):
        visual[0].search("v", request_)
