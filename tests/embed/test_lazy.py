"""Models load by need: a LazyEmbedder builds on first use (once, thread-safe) and remembers a failure;
a pipeline loads only the models of the spaces its corpora use, and /health says which are loaded."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder, load_embedder
from mmrag.embed.lazy import LazyEmbedder, model_states, one_line, usable
from mmrag.errors import Unavailable
from mmrag.types import SearchRequest
from tests.conftest import make_settings


def test_loads_once_on_first_use_even_from_many_threads() -> None:
    calls: list[int] = []

    def loader() -> Embedder:
        calls.append(1)
        time.sleep(0.05)  # a slow load: the other threads must wait for this one, not start their own
        return load_embedder("fake:8")

    lazy = LazyEmbedder("fake:8", loader)
    assert lazy.state == "not loaded" and lazy.spec == "fake:8" and not calls  # the spec costs nothing
    dims: list[int] = []
    threads = [threading.Thread(target=lambda: dims.append(lazy.dim)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert dims == [8] * 8 and len(calls) == 1 and lazy.state == "loaded"
    assert lazy.embed("hello").shape == (8,) and not lazy.multivector and lazy.max_batch == 32


def test_a_failed_load_is_remembered_with_its_reason() -> None:
    calls, reasons = [], []

    def loader() -> Embedder:
        calls.append(1)
        raise OSError("no such file: /models/clip.safetensors")

    lazy = LazyEmbedder("open_clip:x", loader, reasons.append)
    assert not usable(lazy)
    assert lazy.state == "failed" and "no such file" in (lazy.failure or "")
    with pytest.raises(Unavailable, match="open_clip:x is not available: OSError: no such file"):
        lazy.embed_batch(["q"])
    with pytest.raises(Unavailable):
        _ = lazy.dim
    assert len(calls) == 1 and reasons == [lazy.failure]  # not loaded again; reported once
    assert model_states({"clip": lazy}) == {"clip": {"model": "open_clip:x", "state": "failed",
                                                     "reason": lazy.failure}}


def test_one_line_keeps_the_first_line_and_cuts_it() -> None:
    hub = "We couldn't connect to 'https://huggingface.co'.\nCheck your internet connection or see ..."
    assert one_line(hub) == "We couldn't connect to 'https://huggingface.co'."
    assert len(one_line("x" * 1000, 50)) == 50


@pytest.fixture()
def lazy_pipeline(tmp_path: Path, clip_spec: str, hf_colqwen2_dir: Path) -> Iterator:
    from mmrag.pipeline import build_pipeline

    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:8"
    settings.embed.clip_model = clip_spec
    settings.embed.colpali_model = f"hf:{hf_colqwen2_dir}"
    settings.embed.device = "cpu"
    p = build_pipeline(settings)
    yield p
    p.close()


MODEL_SPACES = ("text", "clip", "colpali")


def states(pipeline) -> dict[str, str]:
    """State of the spaces that have a model (bm25 and the like have none: always ready)."""
    return {name: info["state"] for name, info in pipeline.health()["spaces"].items() if name in MODEL_SPACES}


def test_a_process_loads_only_the_models_its_corpora_use(lazy_pipeline, corpus_dir: Path) -> None:
    p = lazy_pipeline
    assert states(p) == {"text": "not loaded", "clip": "not loaded", "colpali": "not loaded"}
    assert p.health()["spaces"]["bm25"] == {"model": None, "state": "loaded"}
    config = p.corpora.create_corpus("c", CorpusConfig(spaces=["text", "bm25", "clip"]))
    assert config.clip_model == p.settings.embed.clip_model and config.colpali_model is None
    assert states(p) == {"text": "loaded", "clip": "loaded", "colpali": "not loaded"}
    pdf = sorted((corpus_dir / "pdf").glob("*.pdf"))[0]
    p.ingest.path("c", pdf)
    hits = p.search("c", SearchRequest(query="table", top_k=3)).evidence
    assert hits and states(p)["colpali"] == "not loaded"  # never needed, never loaded


def test_a_model_that_cannot_load_is_left_out_of_new_corpora_with_its_reason(tmp_path: Path) -> None:
    from mmrag.pipeline import build_pipeline

    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:8"
    settings.embed.clip_model = f"open_clip:ViT-B-32/{tmp_path / 'missing.safetensors'}"
    p = build_pipeline(settings)
    try:
        config = p.corpora.create_corpus("c")  # default spaces: text, bm25, clip, colpali, ...
        assert {"text", "bm25"} <= set(config.spaces) and not {"clip", "colpali"} & set(config.spaces)
        assert config.clip_model is None and config.text_model == "fake:8"
        health = p.health()
        assert "clip" not in health["spaces"] and "missing.safetensors" in health["unavailable"]["clip"]
        assert health["unavailable"]["colpali"] == "disabled in configuration"
    finally:
        p.close()


def test_a_remote_model_is_asked_again_after_a_failure() -> None:
    """With ``retry`` (the embedding service may come up later) a failure is not final."""
    answers: list[Exception | None] = [Unavailable("embedding service unreachable"), None]

    def loader() -> Embedder:
        error = answers.pop(0)
        if error is not None:
            raise error
        return load_embedder("fake:4")

    lazy = LazyEmbedder("fake:4", loader, retry=True)
    assert not usable(lazy) and lazy.state == "failed"
    assert usable(lazy) and lazy.state == "loaded" and lazy.failure is None and lazy.dim == 4
