"""The composition root end to end in-process, on the real MiniLM and both store engines."""

from __future__ import annotations

import numpy as np
import pytest

from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.pipeline import build_pipeline
from mmrag.types import SearchRequest
from tests.conftest import make_settings

DOCS = ["2305.03393v1-pg9.pdf", "amt_handbook_sample.pdf", "normal_4pages.pdf", "code_and_formula.pdf"]


def _load(pipeline, corpus_dir, metadata=None):
    pipeline.corpora.create_corpus("c")
    for i, name in enumerate(DOCS):
        pipeline.ingest.path("c", corpus_dir / "pdf" / name, metadata or {"group": "a" if i % 2 else "b"})


def test_ingest_is_idempotent_and_delete_removes_points(pipeline, corpus_dir):
    _load(pipeline, corpus_dir)
    pages = sum(d.page_count for d in pipeline.catalog.documents.listed("c"))
    assert pipeline.store.count("c") == pages == 1 + 1 + 4 + 2
    data = (corpus_dir / "pdf" / DOCS[0]).read_bytes()
    again = pipeline.ingest.file_bytes("c", data, "copy.pdf")
    assert not again.created and again.document.filename == DOCS[0]
    assert pipeline.store.count("c") == pages
    doc = next(d for d in pipeline.catalog.documents.listed("c") if d.filename == "normal_4pages.pdf")
    page_ids = [p.id for p in pipeline.catalog.pages.of_document("c", doc.id)]
    assert len(page_ids) == 4 and all(pipeline.catalog.pages.image("c", p)[:4] == b"\x89PNG" for p in page_ids)
    pipeline.corpora.delete_document("c", doc.id)
    assert pipeline.store.count("c") == pages - 4
    assert pipeline.catalog.pages.of_document("c", doc.id) == []
    for page_id in page_ids:
        with pytest.raises(NotFound):
            pipeline.catalog.pages.image("c", page_id)
    with pytest.raises(NotFound):
        pipeline.corpora.delete_document("c", doc.id)


def test_search_filters_and_explain(pipeline, corpus_dir):
    _load(pipeline, corpus_dir)
    r = pipeline.search("c", SearchRequest(query="table structure recognition tokenization", top_k=3, explain=True))
    top = r.evidence[0]
    assert top.filename == "2305.03393v1-pg9.pdf" and top.page == 1
    assert set(top.ranks) == {"text", "bm25"} and top.snippet and len(top.boxes) == len(top.snippet.split())
    docs = {d.filename: d.id for d in pipeline.catalog.documents.listed("c")}
    only = pipeline.search("c", SearchRequest(query="table structure", top_k=10,
                                              document_ids=[docs["normal_4pages.pdf"]]))
    assert only.evidence and {e.filename for e in only.evidence} == {"normal_4pages.pdf"}
    meta = pipeline.search("c", SearchRequest(query="table", top_k=10, metadata={"group": "a"}))
    assert {e.filename for e in meta.evidence} <= {DOCS[1], DOCS[3]}
    bm25 = pipeline.search("c", SearchRequest(query="aircraft nut bolt", top_k=2, spaces=["bm25"], explain=True))
    assert bm25.evidence[0].filename == "amt_handbook_sample.pdf" and set(bm25.evidence[0].ranks) == {"bm25"}


@pytest.mark.parametrize("request_,match", [
    (SearchRequest(query="   "), "empty query"),
    (SearchRequest(query="x", top_k=0), "top_k"),
    (SearchRequest(query="x", top_k=10_000), "top_k"),
    (SearchRequest(query="x", spaces=["bm25"], weights={"text": 2.0}), "weight"),
    (SearchRequest(query="x" * 5000), "limit"),
    (SearchRequest(query="", image=b"not an image"), "cannot be decoded"),
])
def test_bad_search_requests(pipeline, request_, match):
    pipeline.corpora.create_corpus("c")
    with pytest.raises(InvalidInput, match=match):
        pipeline.search("c", request_)


def test_a_space_the_corpus_lacks_is_a_conflict(pipeline):
    pipeline.corpora.create_corpus("c")
    with pytest.raises(Conflict, match="not available for this corpus"):
        pipeline.search("c", SearchRequest(query="x", spaces=["colpali"]))


def test_unknown_corpus_and_conflicts(pipeline):
    with pytest.raises(NotFound, match="unknown corpus"):
        pipeline.search("nope", SearchRequest(query="x"))
    pipeline.corpora.create_corpus("c")
    with pytest.raises(Conflict):
        pipeline.corpora.create_corpus("c")
    with pytest.raises(InvalidInput, match="not allowed"):
        pipeline.corpora.create_corpus("Bad Name!")


def test_data_folder_has_one_owner(settings, minilm):
    first = build_pipeline(settings, embedders={"text": minilm})
    try:
        with pytest.raises(Conflict, match="in use"):
            build_pipeline(settings, embedders={"text": minilm})
    finally:
        first.close()
    build_pipeline(settings, embedders={"text": minilm}).close()


def test_engines_give_the_same_results(tmp_path, minilm, corpus_dir):
    """Pipeline-level congruence: the embedded edge engine and qdrant-client's code path."""
    results = []
    for engine in ("edge", "local"):
        p = build_pipeline(make_settings(tmp_path / engine, engine=engine), embedders={"text": minilm})
        try:
            _load(p, corpus_dir)
            for q in ("locking nut", "evolution of the word processor", "python code formula"):
                r = p.search("c", SearchRequest(query=q, top_k=5))
                results.append((engine, q, [(e.filename, e.page) for e in r.evidence],
                                [round(e.score, 4) for e in r.evidence]))
        finally:
            p.close()
    half = len(results) // 2
    for a, b in zip(results[:half], results[half:], strict=True):
        assert a[1:3] == b[1:3]  # the same pages in the same order
        # text chunk vectors are stored as float16 (CorpusConfig.text_datatype): the engines round alike
        # up to the last digit printed
        assert np.allclose(a[3], b[3], atol=2e-4), (a, b)


def test_corpus_records_its_creation_time(pipeline):
    import time

    from fastapi.testclient import TestClient

    from api.app import create_app

    before = time.time()
    with TestClient(create_app(pipeline.settings, pipeline)) as client:
        created = client.post("/corpora", json={"name": "c"}).json()["created_at"]
        assert before <= created <= time.time()
        assert client.get("/corpora/c").json()["created_at"] == created
        assert [c["created_at"] for c in client.get("/corpora").json()] == [created]
        assert client.get("/corpora/nope").status_code == 404


def test_warm_up_loads_the_text_model_and_the_models_of_served_corpora_only(tmp_path):
    from mmrag.config import CorpusConfig

    settings = make_settings(tmp_path / "data")
    settings.embed.text_model, settings.embed.clip_model = "fake:16", "fake:8"
    first = build_pipeline(settings, run_jobs=False)
    try:
        assert {s: e.state for s, e in first.embedders.items()} == {"text": "not loaded", "clip": "not loaded"}
        first.corpora.warm_up()
        assert {s: e.state for s, e in first.embedders.items()} == {"text": "loaded", "clip": "not loaded"}
        first.corpora.create_corpus("c", CorpusConfig(spaces=["text", "clip"]))
    finally:
        first.close()
    again = build_pipeline(settings, run_jobs=False)  # a restart: corpus "c" uses clip, so it loads now
    try:
        again.corpora.warm_up()
        assert {s: e.state for s, e in again.embedders.items()} == {"text": "loaded", "clip": "loaded"}
    finally:
        again.close()


def test_start_up_opens_no_corpus_vectors_until_a_corpus_is_used(tmp_path):
    """Start-up's work does not grow with the corpora's vectors: the runner's recovery reads the catalog, the
    warm-up loads models and rankers, and a corpus's collection (segments, id tracker, in-RAM sparse indexes) is
    opened by its first use."""
    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:16"
    first = build_pipeline(settings)
    try:
        for name in ("a", "b"):
            first.corpora.create_corpus(name)
            first.ingest.file_bytes(name, b"one page of text about turbines", f"{name}.txt")
    finally:
        first.close()
    again = build_pipeline(settings)  # as a server starts: the runner's recovery (per corpus: BM25's totals), then
    try:  # the warm-up
        again.warm_up()
        assert again.store._shards == {}  # type: ignore[attr-defined]
        assert again.search("a", SearchRequest(query="turbines")).evidence
        assert set(again.store._shards) == {"a"}  # type: ignore[attr-defined]
    finally:
        again.close()


def test_the_pipelines_warm_up_loads_the_corpora_rankers_and_freezes_what_start_up_loaded(pipeline):
    import gc

    from mmrag.retrieve import ranker

    pipeline.corpora.create_corpus("c")
    ranker._CACHE.clear()
    frozen = gc.get_freeze_count()
    try:
        pipeline.warm_up()
        assert [path for path, _ in ranker._CACHE] == [str(ranker.SHIPPED.resolve())]  # the corpus's ranker
        count = gc.get_freeze_count()
        assert count > 0  # start-up's objects are out of the collector's scans
        pipeline.warm_up()
        assert gc.get_freeze_count() == count  # once per process: a second warm-up freezes nothing more
    finally:
        if not frozen:
            gc.unfreeze()


def test_closing_waits_for_the_start_up_warm_up(tmp_path, monkeypatch):
    """A server stopped while its warm-up thread still loaded models closed the catalog under it: the thread
    then died on ``Cannot operate on a closed database`` (seen in tests/api/test_load.py)."""
    import threading
    import time

    from mmrag.corpora import Corpora

    settings = make_settings(tmp_path / "data")
    settings.embed.text_model = "fake:16"
    p = build_pipeline(settings, run_jobs=False)
    p.corpora.create_corpus("c")
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    slow_load = Corpora.warm_up
    monkeypatch.setattr(Corpora, "warm_up", lambda self: (time.sleep(0.5), slow_load(self)))  # a model loading
    p.start_warm_up()
    p.close()  # at once, while the warm-up sleeps
    assert p._warming is not None and not p._warming.is_alive()
    assert errors == []
