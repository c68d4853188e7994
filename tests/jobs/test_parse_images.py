"""No page image nobody asked for: a corpus without a visual space is parsed without rendering or
PNG-encoding its pages, and its page images are still served, rendered on demand, with the pixels a
visual corpus's embedders see."""

from __future__ import annotations

import io

import numpy as np
from fastapi.testclient import TestClient
from PIL import Image

from api.app import create_app
from mmrag.config import CorpusConfig, IngestConfig
from mmrag.embed.base import EmbedderOptions, load_embedder
from mmrag.jobs.pages import needs_images
from mmrag.pipeline import build_pipeline
from mmrag.spaces.base import Space
from mmrag.spaces.bm25 import Bm25Space
from mmrag.spaces.document import DocumentSpace
from mmrag.spaces.registry import space_type
from mmrag.spaces.text import TextDenseSpace
from mmrag.spaces.visual import ClipSpace, ColpaliSpace
from tests.conftest import make_settings
from tests.fixtures.tiny_models import build_tiny_open_clip


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_pages_are_rendered_for_the_registered_spaces_that_need_images():
    classes: list[type[Space]] = [TextDenseSpace, Bm25Space, ClipSpace, ColpaliSpace, DocumentSpace]
    assert {c.name: space_type(c.name) for c in classes} == {c.name: c for c in classes}
    assert {c.name for c in classes if c.needs_image} == {"clip", "colpali"}
    assert not needs_images(["text", "bm25", "document"], IngestConfig())
    assert needs_images(["text", "clip"], IngestConfig())
    assert needs_images(["text"], IngestConfig(keep_page_files=True))  # every PNG kept as a file


def test_text_corpus_parses_without_images_and_serves_them_on_demand(tmp_path, minilm, corpus_dir):
    clip = load_embedder(f"open_clip:local-dir:{build_tiny_open_clip(tmp_path / 'clip') / 'local'}",
                         EmbedderOptions(device="cpu"))
    settings = make_settings(tmp_path / "data")
    pipeline = build_pipeline(settings, embedders={"text": minilm, "clip": clip})
    data = (corpus_dir / "pdf" / "normal_4pages.pdf").read_bytes()
    try:
        pipeline.corpora.create_corpus("words", CorpusConfig(spaces=["text", "bm25"]))
        pipeline.corpora.create_corpus("pixels", CorpusConfig(spaces=["text", "clip"]))
        jobs = {c: pipeline.ingest.file_bytes(c, data, "normal_4pages.pdf") for c in ("words", "pixels")}
        words_timings, pixels_timings = jobs["words"].timings, jobs["pixels"].timings
        assert "parse_render" not in words_timings and "parse_encode_png" not in words_timings
        assert pixels_timings["parse_render"] > 0 and pixels_timings["parse_encode_png"] > 0
        assert words_timings["parse_text"] > 0 and words_timings["parse_tables"] > 0
        doc_id = jobs["words"].document.id
        with TestClient(create_app(settings, pipeline)) as client:
            for plain, visual in zip(pipeline.catalog.pages.of_document("words", doc_id),
                                     pipeline.catalog.pages.of_document("pixels", doc_id), strict=True):
                assert plain.image_hash == "" and visual.image_hash != ""
                served = client.get(f"/corpora/words/pages/{plain.id}/image")
                assert served.status_code == 200 and served.headers["content-type"] == "image/png"
                image = _pixels(served.content)
                assert image.shape[:2] == (plain.height, plain.width) == (visual.height, visual.width)
                assert np.array_equal(image, _pixels(pipeline.catalog.pages.image("pixels", visual.id)))
    finally:
        pipeline.close()
