"""The candidates' page traits: stored at ingestion, read back by the search instead of computed from the text,
and the same ranking either way; a page written before traits were stored (or whose stored value is of another
version) has them read from its text."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pymupdf
import pytest

from mmrag.jobs.doc_reindex import reindex_documents
from mmrag.retrieve.candidates import PageTraitsCache
from mmrag.retrieve.rank_features import page_traits
from mmrag.spaces.page_traits import TRAITS_VERSION, pack_traits, text_traits, unpack_traits
from mmrag.types import SearchRequest

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not SHARED.exists():
    SHARED = Path("/work/shared/corpus")
QUERY = "What were the cash flows from operating activities, per the statement of cash flows?"


@pytest.fixture()
def filing(pipeline, tmp_path: Path):
    """The statements and first notes of a real quarterly report, ingested by the product."""
    with pymupdf.open(SHARED / "sec-10q" / "pdf" / "2023 Q1 MSFT.pdf") as src, pymupdf.open() as out:
        out.insert_pdf(src, from_page=2, to_page=9)
        data = out.tobytes()
    pipeline.corpora.create_corpus("f")
    pipeline.ingest.file_bytes("f", data, "msft-q1.pdf")
    return pipeline


def _rows(pipeline) -> list[tuple[str, bytes | None]]:
    with sqlite3.connect(pipeline.catalog.data_dir / "catalog.sqlite3") as db:
        return db.execute("SELECT id, traits FROM pages WHERE corpus = 'f' ORDER BY number").fetchall()


def _set_traits(pipeline, values: dict[str, bytes | None]) -> None:
    with sqlite3.connect(pipeline.catalog.data_dir / "catalog.sqlite3") as db:
        db.executemany("UPDATE pages SET traits = ? WHERE corpus = 'f' AND id = ?", [(v, k) for k, v in values.items()])


def test_ingestion_stores_each_page_s_traits_as_its_text_reads(filing) -> None:
    rows = _rows(filing)
    ids = [pid for pid, _ in rows]
    assert len(rows) == 8 and all(packed is not None for _, packed in rows)
    stored = filing.catalog.pages.texts_and_sections("f", ids)
    for pid, packed in rows:
        assert unpack_traits(packed) == text_traits(*stored[pid])
    assert any(t.kinds for _, p in rows if (t := unpack_traits(p)) is not None)  # statements told apart
    cache = PageTraitsCache(filing.catalog)
    assert cache.get("f", ids) == {pid: page_traits(*stored[pid]) for pid in ids}


def test_the_cache_reads_the_stored_traits_and_reads_the_text_where_there_are_none(filing) -> None:
    ids = [pid for pid, _ in _rows(filing)]
    stored = filing.catalog.pages.texts_and_sections("f", ids)
    marked = text_traits("a page of twelve thousand words")
    other_version = bytearray(pack_traits(marked))
    other_version[0] = TRAITS_VERSION + 1
    _set_traits(filing, {ids[0]: pack_traits(marked), ids[1]: None, ids[2]: bytes(other_version)})
    got = PageTraitsCache(filing.catalog).get("f", [*ids[:3], "no-such-page"])
    assert got[ids[0]].words == marked.words  # the stored value, not the text's
    assert got[ids[1]] == page_traits(*stored[ids[1]])  # none stored: read from the text
    assert got[ids[2]] == page_traits(*stored[ids[2]])  # another version: read from the text
    assert got["no-such-page"] == page_traits("")
    extended = PageTraitsCache(filing.catalog).get("f", ids[:1], extended=True)[ids[0]]
    assert extended.extended and extended == page_traits(*stored[ids[0]], extended=True)  # never from the store


def test_a_search_ranks_alike_with_stored_traits_and_with_traits_read_from_text(filing) -> None:
    request = SearchRequest(query=QUERY, top_k=8, explain=True)
    with_stored = filing.search("f", request).evidence
    _set_traits(filing, {pid: None for pid, _ in _rows(filing)})
    filing.retriever.page_traits = PageTraitsCache(filing.catalog)  # a process started after the change
    from_text = filing.search("f", request).evidence
    assert [(e.page, round(e.score, 6)) for e in with_stored] == [(e.page, round(e.score, 6)) for e in from_text]
    assert with_stored[0].scores.keys() >= {"ranker.figures", "ranker.is_statement"}


def test_reindexing_stores_the_traits_of_pages_written_without_them(filing) -> None:
    rows = _rows(filing)
    ids = [pid for pid, _ in rows]
    other_version = bytearray(rows[1][1] or b"")
    other_version[0] = TRAITS_VERSION + 1
    _set_traits(filing, {ids[0]: None, ids[1]: bytes(other_version)})
    done = reindex_documents(filing.catalog, filing.store, filing.spaces, "f")
    assert done.traits == 2
    assert _rows(filing) == rows  # as ingestion had stored them
    assert reindex_documents(filing.catalog, filing.store, filing.spaces, "f").traits == 0
