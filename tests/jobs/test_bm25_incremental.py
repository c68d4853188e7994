"""BM25's statistics kept at the cost of a job's own pages: a small job into a large corpus rewrites no other
page, a re-weight waits until enough pages changed, a document embedded before a re-weight is fixed alone,
a restart after a deletion ranks as before it, and a catalog written before the change still opens."""

from __future__ import annotations

import sqlite3

import pytest

from mmrag.catalog import Catalog
from mmrag.catalog.bm25_lengths import Bm25Indexed, Bm25Totals
from mmrag.config import CorpusConfig
from mmrag.embed.base import load_embedder
from mmrag.jobs import bm25_stats
from mmrag.jobs.writer import Upload
from mmrag.types import SearchRequest
from tests.conftest import make_settings
from tests.jobs.test_bm25_stats import SPACES, expected, pipe, stored, words_pdf  # noqa: F401  (pipe: a fixture)


def bm25s(p, corpus: str) -> dict[str, dict[int, float]]:
    return {pid: v[0] for pid, v in stored(p, corpus).items()}


def test_reweight_due_waits_for_drift_and_for_changed_pages():
    totals = Bm25Totals(pages=100, length=100 * 130)  # average 130
    assert not bm25_stats.reweight_due(Bm25Indexed(100.0, False, changed=100), Bm25Totals(0, 0))
    assert bm25_stats.reweight_due(Bm25Indexed(None, True), totals)  # the first documents: their batches' own
    assert bm25_stats.reweight_due(Bm25Indexed(120.0, True), totals)  # stale (catalogs of earlier versions)
    assert not bm25_stats.reweight_due(Bm25Indexed(120.0, False, changed=100), totals)  # 8 %: no drift
    assert not bm25_stats.reweight_due(Bm25Indexed(100.0, False, changed=24), totals)  # drift, 24 pages changed
    assert bm25_stats.reweight_due(Bm25Indexed(100.0, False, changed=25), totals)  # drift, a quarter changed


def test_a_small_job_into_a_larger_corpus_rewrites_no_other_page(pipe):  # noqa: F811
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    pipe.ingest.file_bytes("c", words_pdf(11, 8, 50), "a.pdf")  # the first job: re-weighted to its average
    first = pipe.catalog.bm25.indexed("c").avg_len
    assert first is not None
    before = bm25s(pipe, "c")

    for i, changed in ((1, 1), (2, 2)):  # long pages move the average far, but 1 and 2 of 9 and 10 pages changed
        done = pipe.ingest.file_bytes("c", words_pdf(20 + i, 1, 900), f"long{i}.pdf")
        assert "bm25_reweight" not in done.timings
        assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(first, False, changed)
        now = bm25s(pipe, "c")
        assert all(now[pid] == before[pid] for pid in before)  # no other page rewritten
        assert now == expected(pipe, "c", first)  # the new page with the corpus's indexed average
    assert bm25_stats.corpus_avg_len(pipe.catalog, "c") > first * (1 + bm25_stats.DRIFT)

    done = pipe.ingest.file_bytes("c", words_pdf(23, 1, 900), "long3.pdf")  # 3 of 11 pages: a quarter changed
    assert done.timings["bm25_reweight"] > 0
    avg = pipe.catalog.bm25.indexed("c").avg_len
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(avg, False, 0)
    assert avg == pytest.approx(bm25_stats.corpus_avg_len(pipe.catalog, "c"))
    assert bm25s(pipe, "c") == expected(pipe, "c", avg)


def test_a_document_embedded_before_a_reweight_is_rewritten_alone(pipe):  # noqa: F811
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    pipe.ingest.file_bytes("c", words_pdf(31, 3, 80), "a.pdf")
    first = pipe.catalog.bm25.indexed("c").avg_len
    assert first is not None
    job_id = pipe.runner.submit("c", [Upload("late.pdf", words_pdf(32, 2, 80), {})])  # embeds with `first`
    moved = first * 1.15  # within DRIFT of the corpus's average: no re-weight after the job
    bm25_stats.reweight(pipe.catalog, pipe.store, "c", moved)  # lands before the job's document is recorded
    job = pipe.ingest.wait(job_id)
    assert "bm25_reweight" not in job.timings
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(moved, False, 2)
    assert bm25s(pipe, "c") == expected(pipe, "c", moved)  # the late document's pages too


def test_a_restart_after_a_deletion_ranks_bm25_as_before_it(tmp_path):
    from mmrag.pipeline import build_pipeline

    def open_pipeline():
        return build_pipeline(make_settings(tmp_path / "data"), embedders={"text": load_embedder("fake:8")})

    p = open_pipeline()
    p.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    docs = [p.ingest.file_bytes("c", words_pdf(40 + i, 2, 120), f"{i}.pdf").document for i in range(4)]
    p.corpora.delete_document("c", docs[1].id)
    request = SearchRequest(query="revenue margin cloud dividend goodwill", top_k=10, spaces=["bm25"])

    def ranking(pipeline):
        return [(e.page_id, round(e.score, 5)) for e in pipeline.search("c", request).evidence]

    before = ranking(p)
    assert len(before) == 6 and docs[1].id not in {e.document_id for e in p.search("c", request).evidence}
    p.close()
    p = open_pipeline()
    try:
        assert ranking(p) == before
    finally:
        p.close()


def test_a_catalog_written_before_the_changed_count_opens_and_counts(tmp_path):
    db = sqlite3.connect(tmp_path / "catalog.sqlite3")
    db.executescript("CREATE TABLE bm25_indexed (corpus TEXT PRIMARY KEY, avg_len REAL, stale INTEGER NOT NULL);"
                     "INSERT INTO bm25_indexed VALUES ('c', 250.0, 0);")
    db.commit()
    db.close()
    catalog = Catalog(tmp_path)
    try:
        assert catalog.bm25.indexed("c") == Bm25Indexed(250.0, False, 0)
        catalog.bm25.set_length("c", "d", 7, 100, count=True)
        assert catalog.bm25.indexed("c") == Bm25Indexed(250.0, False, 7)
        catalog.bm25.set_indexed("c", 260.0, stale=False)
        assert catalog.bm25.indexed("c") == Bm25Indexed(260.0, False, 0)
    finally:
        catalog.close()
