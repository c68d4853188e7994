"""Fixtures of the job tests."""

from __future__ import annotations

import pytest

from mmrag.embed.base import load_embedder
from mmrag.pipeline import build_pipeline


@pytest.fixture()
def fake_pipeline(settings):
    """A pipeline with the fake text embedder, batches of two pages and an empty corpus ``c``."""
    settings.jobs.batch_pages = 2
    settings.embed.text_model = "fake:384"
    p = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    p.corpora.create_corpus("c")
    yield p
    p.close()
