"""What the kill harness (bench/faults.py) found: a document deletion cut off by a crash. The crash is simulated
in-process by an exception that nothing catches (like SIGKILL, it stops the writer between two of its writes);
then the owner's start (:meth:`JobWriter.recover`) must finish what was cut off."""

from __future__ import annotations

from collections import Counter

import pytest

from mmrag.catalog.bm25_lengths import Bm25Indexed
from mmrag.catalog.documents import DocumentTable
from mmrag.config import CorpusConfig
from mmrag.jobs import bm25_stats
from tests.jobs.helpers import wait_until
from tests.jobs.test_bm25_stats import SPACES, expected, pipe, stored, words_pdf  # noqa: F401  (pipe: a fixture)


class Crash(BaseException):
    """Stands for SIGKILL at that point (a BaseException: no ``except Exception`` of the writer catches it)."""


def crash(*_args, **_kwargs):
    raise Crash


def two_documents(pipe) -> tuple[str, str]:  # noqa: F811
    """A corpus ``c`` of a short and a long document: deleting the long one moves the average past DRIFT."""
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    short = pipe.ingest.file_bytes("c", words_pdf(1, 3, 50), "short.pdf").document.id
    long = pipe.ingest.file_bytes("c", words_pdf(2, 3, 600), "long.pdf").document.id
    return short, long


def points(pipe) -> Counter[str]:  # noqa: F811
    return Counter(h.payload["document_id"] for h in pipe.store.scroll("c"))


def test_a_reweight_cut_off_after_a_deletion_is_redone_at_the_next_start(pipe, monkeypatch):  # noqa: F811
    """The harness's kill in the BM25 re-weight after a deletion left the corpus's BM25 vectors on the old average
    (its searches ranked unlike a clean ingest's) for good: no job was left to redo it."""
    _, long = two_documents(pipe)
    with monkeypatch.context() as m:
        m.setattr(bm25_stats, "reweight", crash)
        with pytest.raises(Crash):
            pipe.corpora.delete_document("c", long)
    avg = bm25_stats.corpus_avg_len(pipe.catalog, "c")
    assert avg is not None and pipe.catalog.bm25.indexed("c").avg_len != pytest.approx(avg)  # the cut-off state

    assert pipe.job_writer.recover() == []
    assert pipe.catalog.bm25.indexed("c").avg_len == pytest.approx(avg)
    assert {pid: v[0] for pid, v in stored(pipe, "c").items()} == expected(pipe, "c", avg)
    assert pipe.job_writer.jobs.deletions() == []


@pytest.mark.parametrize("at", ["catalog", "store"])
def test_a_deletion_cut_off_leaves_no_listed_document_without_points(pipe, monkeypatch, at):  # noqa: F811
    """Killed between the store's delete and the catalog's, the document stayed listed with no point (lost pages)
    until a client sent the deletion again; now the catalog row goes first and the next start finishes the rest."""
    short, long = two_documents(pipe)
    with monkeypatch.context() as m:
        m.setattr(DocumentTable if at == "catalog" else type(pipe.store), "delete", crash)
        with pytest.raises(Crash):
            pipe.corpora.delete_document("c", long)
    listed = {d.id for d in pipe.catalog.documents.listed("c")}
    assert all(points(pipe)[d] for d in listed), "a listed document without points"

    assert pipe.job_writer.recover() == []  # the next start
    assert set(points(pipe)) == {short} and {d.id for d in pipe.catalog.documents.listed("c")} == {short}
    assert pipe.job_writer.jobs.deletions() == []


def test_a_corpus_with_a_job_cut_off_is_reweighted_at_that_jobs_end_not_at_the_start(pipe):  # noqa: F811
    """The kill harness's one mismatch: killed while a first job's documents were being recorded (the corpus's
    BM25 average still the batches' own, marked stale), the next start re-weighted the corpus at once, fixing its
    average from the documents recorded before the kill; the job's other documents were then indexed with that
    average, where a run without the kill uses the whole job's. The start now leaves such a corpus to its job."""
    from mmrag.jobs.writer import Upload

    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    pipe.ingest.file_bytes("c", words_pdf(1, 3, 50), "short.pdf")
    pipe.catalog.bm25.set_indexed("c", None, stale=True)  # as while a corpus's first job records its documents
    job_id, _ = pipe.job_writer.submit("c", [Upload("long.pdf", words_pdf(2, 3, 600), {})])  # cut off, unfinished
    pipe.corpora.create_corpus("d", CorpusConfig(spaces=SPACES))  # the same state, no job left: re-weighted now
    pipe.ingest.file_bytes("d", words_pdf(1, 3, 50), "short.pdf")
    pipe.catalog.bm25.set_indexed("d", None, stale=True)

    assert pipe.job_writer.recover() == [job_id]  # the next start
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(None, True), "re-weighted before its job ended"
    avg_d = bm25_stats.corpus_avg_len(pipe.catalog, "d")
    assert pipe.catalog.bm25.indexed("d").avg_len == pytest.approx(avg_d)

    pipe.runner.send(pipe.job_writer.pending_work(job_id))
    wait_until(lambda: pipe.jobs.status(job_id).finished, timeout=60)
    avg = bm25_stats.corpus_avg_len(pipe.catalog, "c")  # the whole job's: short and long
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(avg, False)
    assert {pid: v[0] for pid, v in stored(pipe, "c").items()} == expected(pipe, "c", avg)


def test_a_reweight_cut_off_half_way_is_found_stale(pipe, monkeypatch):  # noqa: F811
    """A re-weight killed between two of its store updates (one on request: no job or deletion redoes it) left
    the corpus half on each average with nothing marked; now it is stale until a re-weight completes."""
    two_documents(pipe)
    before = pipe.catalog.bm25.indexed("c")
    with monkeypatch.context() as m:
        m.setattr(bm25_stats, "_rewrite", crash)
        with pytest.raises(Crash):
            bm25_stats.reweight(pipe.catalog, pipe.store, "c", 123.0)
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(before.avg_len, True)
    assert pipe.job_writer.recover() == []
    avg = bm25_stats.corpus_avg_len(pipe.catalog, "c")
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(avg, False)
    assert {pid: v[0] for pid, v in stored(pipe, "c").items()} == expected(pipe, "c", avg)
