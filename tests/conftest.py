"""Shared fixtures: the real MiniLM embedder (offline), settings in a temp data folder, pipelines."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tests.fixtures.fake_embedders import register_fakes

register_fakes()  # fake:<dim> / fake-mv:<dim> for the tests of other stages (not in the production table)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "docling"
if not CORPUS.exists():  # CI lays shared/ beside the clone
    CORPUS = Path(os.environ.get("MMRAG_TEST_CORPUS", "/work/shared/corpus/docling"))


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    assert CORPUS.exists(), f"test corpus missing at {CORPUS} (set MMRAG_TEST_CORPUS)"
    return CORPUS


@pytest.fixture(scope="session")
def minilm():
    from mmrag.embed.base import load_embedder

    return load_embedder("st:sentence-transformers/all-MiniLM-L6-v2")


def make_settings(data_dir: Path, **store: object):
    from mmrag.config import Settings

    settings = Settings(data_dir=data_dir)
    settings.embed.clip_model = None
    settings.embed.colpali_model = None
    settings.vlm.backend = "none"
    for key, value in store.items():
        setattr(settings.store, key, value)
    return settings


@pytest.fixture()
def settings(tmp_path: Path):
    return make_settings(tmp_path / "data")


@pytest.fixture()
def pipeline(settings, minilm) -> Iterator:
    from mmrag.pipeline import build_pipeline

    p = build_pipeline(settings, embedders={"text": minilm})
    yield p
    p.close()
