"""bench/store_datatype.py's core on a real two-PDF ingest: a corpus's vectors copied into turbo8 storage,
compared with the original, then swapped in (the corpus then searches its turbo8 copy)."""

from __future__ import annotations

from bench import store_datatype as sd
from bench._scale_measure import disk_by_vector, resident_by_part
from mmrag.config import CorpusConfig
from mmrag.pipeline import build_pipeline
from mmrag.types import SearchRequest
from tests.conftest import make_settings

QUERIES = ["code listing and a formula", "several pages of text"]


def test_a_turbo8_copy_finds_what_the_original_finds_and_can_replace_it(tmp_path, minilm, corpus_dir) -> None:
    data = tmp_path / "data"
    pipeline = build_pipeline(make_settings(data), embedders={"text": minilm})
    try:
        pipeline.corpora.create_corpus("c", CorpusConfig(spaces=["text", "bm25", "document"]))
        pipeline.ingest.files("c", [corpus_dir / "pdf" / "multi_page.pdf", corpus_dir / "pdf" / "code_and_formula.pdf"])
        pages = pipeline.store.count("c")
        config = pipeline.catalog.corpora.config("c")
        assert sd.copy_collection(pipeline, "c", "c.turbo8", config.model_copy(update={"text_datatype": "turbo8"})) \
            == pages
        found = sd.recall(pipeline, "c", ["c.turbo8"], QUERIES, None, {})["c.turbo8"]
        assert found[0] == found[1] == [1.0, 1.0]  # a few pages: the same top 10, by point and by contents
        ms = sd.latencies(pipeline, ["c", "c.turbo8"], QUERIES, rounds=2)
        assert [len(v) for v in ms.values()] == [4, 4]
        resident = resident_by_part(data / "qdrant-edge")
        assert resident["c/vector_storage-text"] > 0 and resident["c.turbo8/vector_storage-text"] > 0
        before = pipeline.search("c", SearchRequest(query=QUERIES[0], top_k=3))
    finally:
        pipeline.close()
    assert disk_by_vector(data / "qdrant-edge" / "c.turbo8")["vector_storage-text"] > 0
    sd.swap(data, "c", "turbo8")
    again = build_pipeline(make_settings(data), embedders={"text": minilm})
    try:
        assert again.catalog.corpora.config("c").text_datatype == "turbo8"
        assert (data / "qdrant-edge" / "c.float16").is_dir()  # the original kept beside it
        after = again.search("c", SearchRequest(query=QUERIES[0], top_k=3))
        assert [e.page_id for e in after.evidence][:1] == [e.page_id for e in before.evidence][:1]
    finally:
        again.close()
