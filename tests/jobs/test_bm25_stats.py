"""BM25's average page length from the corpus's own statistics: what ``dl`` is, the corpus mean,
fixed values, re-weighting on drift (equal to a fresh ingest with that average), old catalogs."""

from __future__ import annotations

import random
import sqlite3

import pymupdf
import pytest
from typer.testing import CliRunner

from mmrag.catalog import Catalog
from mmrag.catalog.bm25_lengths import Bm25Indexed, Bm25Totals
from mmrag.config import CorpusConfig
from mmrag.embed.base import load_embedder
from mmrag.jobs import bm25_stats
from mmrag.spaces.bm25 import Bm25Space, bm25_length, bm25_model, bm25_text
from tests.conftest import make_settings

WORDS = ["revenue", "margin", "quarter", "fiscal", "operating", "income", "segment", "cloud", "devices", "services",
         "tax", "cash", "flow", "inventory", "guidance", "growth", "decline", "products", "customers", "region",
         "europe", "americas", "asia", "dividend", "shares", "repurchase", "liabilities", "assets", "goodwill"]
SPACES = ["text", "bm25"]


def words_pdf(seed: int, pages: int, words: int) -> bytes:
    rng = random.Random(seed)
    doc = pymupdf.open()
    for _ in range(pages):
        page = doc.new_page()
        box = pymupdf.Rect(36, 36, page.rect.width - 36, page.rect.height - 36)
        page.insert_textbox(box, " ".join(rng.choice(WORDS) for _ in range(words)), fontsize=7)
    return doc.tobytes()


@pytest.fixture()
def pipe(tmp_path):
    from mmrag.pipeline import build_pipeline

    p = build_pipeline(make_settings(tmp_path / "data"), embedders={"text": load_embedder("fake:8")})
    yield p
    p.close()


def sparse(v) -> dict[int, float]:
    return dict(zip(v.indices, v.values, strict=True))


def stored(p, corpus: str) -> dict[str, tuple[dict[int, float], list, dict]]:
    """page id -> (bm25, text vector, payload) as the store holds them."""
    return {h.payload["page_id"]: (sparse(h.vectors["bm25"]), h.vectors["text"], h.payload)
            for h in p.store.scroll(corpus, with_vectors=["bm25", "text"])}


def expected(p, corpus: str, avg: float) -> dict[str, dict[int, float]]:
    model = bm25_model(avg)
    return {t.page_id: sparse(model.embed_document(t.text)) for t in p.catalog.pages.texts(corpus)}


def test_length_is_the_dl_qdrant_normalises_by():
    text = "The revenues grew; revenue of the quarter grew again, and the margins of the segment declined."
    n = bm25_length(text)
    assert bm25_length("the of and a") == 0 and 0 < n < len(text.split())  # stopwords do not count
    # with avg_len == dl the length factor is 1: a token seen c times weighs c * 2.2 / (c + 1.2), 1 when c = 1
    at_dl = bm25_model(n).embed_document(text).values
    assert all(any(abs(v - c * 2.2 / (c + 1.2)) < 1e-6 for c in range(1, 6)) for v in at_dl)
    assert 1.0 in [pytest.approx(v) for v in at_dl]
    off = bm25_model(n + 1).embed_document(text).values
    assert not any(abs(v - 1.0) < 1e-6 for v in off)


def test_corpus_average_is_the_mean_of_its_pages_and_the_vectors_use_it(pipe):
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    pipe.ingest.file_bytes("c", words_pdf(1, 3, 60), "a.pdf")
    pipe.ingest.file_bytes("c", words_pdf(2, 2, 200), "b.pdf")
    lengths = [bm25_length(t.text) for t in pipe.catalog.pages.texts("c")]
    mean = sum(lengths) / len(lengths)
    assert len(lengths) == 5 and min(lengths) > 0
    assert bm25_stats.corpus_avg_len(pipe.catalog, "c") == pytest.approx(mean)
    indexed = pipe.catalog.bm25.indexed("c")
    avg = indexed.avg_len
    assert not indexed.stale and avg is not None and abs(avg - mean) <= bm25_stats.DRIFT * avg
    assert {pid: v[0] for pid, v in stored(pipe, "c").items()} == expected(pipe, "c", avg)


def test_a_fixed_average_stays_fixed(pipe):
    pipe.corpora.create_corpus("f", CorpusConfig(spaces=SPACES, bm25_avg_len=300))
    pipe.ingest.file_bytes("f", words_pdf(3, 2, 400), "long.pdf")
    assert pipe.catalog.corpora.config("f").bm25_avg_len == 300
    assert {pid: v[0] for pid, v in stored(pipe, "f").items()} == expected(pipe, "f", 300)
    assert pipe.catalog.bm25.indexed("f") == Bm25Indexed(None, False)
    assert bm25_stats.maybe_reweight(pipe.catalog, pipe.store, "f") is None


def test_drift_reweights_exactly_to_a_fresh_ingest_and_touches_nothing_else(pipe, tmp_path, monkeypatch):
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    short, similar, long = words_pdf(4, 3, 50), words_pdf(5, 2, 55), words_pdf(6, 3, 600)
    pipe.ingest.file_bytes("c", short, "short.pdf")
    first = pipe.catalog.bm25.indexed("c").avg_len
    before = stored(pipe, "c")

    quiet = pipe.ingest.file_bytes("c", similar, "similar.pdf")  # the average moves less than DRIFT: no re-weight
    assert pipe.catalog.bm25.indexed("c") == Bm25Indexed(first, False, 2) and "bm25_reweight" not in quiet.timings
    after_similar = stored(pipe, "c")
    assert all(after_similar[pid][0] == before[pid][0] for pid in before)
    assert {pid: v[0] for pid, v in after_similar.items()} == expected(pipe, "c", first)

    moved = pipe.ingest.file_bytes("c", long, "long.pdf")
    long_doc = moved.document
    assert moved.timings["bm25_reweight"] > 0  # in the job's timings, hence the stage metrics
    indexed = pipe.catalog.bm25.indexed("c")
    now = indexed.avg_len
    assert not indexed.stale and now == pytest.approx(bm25_stats.corpus_avg_len(pipe.catalog, "c"))
    assert first is not None and now > first * (1 + bm25_stats.DRIFT)
    reweighted = stored(pipe, "c")
    for pid, (bm25, text, payload) in before.items():
        assert bm25 != reweighted[pid][0]
        assert reweighted[pid][1] == text and reweighted[pid][2] == payload

    pipe.corpora.create_corpus("fresh", CorpusConfig(spaces=SPACES, bm25_avg_len=now))
    for name, data in (("short.pdf", short), ("similar.pdf", similar), ("long.pdf", long)):
        pipe.ingest.file_bytes("fresh", data, name)
    fresh = stored(pipe, "fresh")
    assert fresh.keys() == reweighted.keys()
    assert all(fresh[pid][0] == reweighted[pid][0] for pid in fresh)

    pipe.corpora.delete_document("c", long_doc.id)  # deleting moves the average back: re-weighted again
    back = pipe.catalog.bm25.indexed("c").avg_len
    assert back == pytest.approx(bm25_stats.corpus_avg_len(pipe.catalog, "c")) and back < now
    assert {pid: v[0] for pid, v in stored(pipe, "c").items()} == expected(pipe, "c", back)

    # the explicit operation: the same re-weight on request, from the CLI
    pipe.close()
    from cli import app

    for key, value in {"MMRAG_DATA_DIR": str(pipe.settings.data_dir), "MMRAG_EMBED__CLIP_MODEL": "",
                       "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none"}.items():
        monkeypatch.setenv(key, value)
    ok = CliRunner().invoke(app, ["reweight-bm25", "c"])
    assert ok.exit_code == 0, ok.output
    assert "BM25 of 5 pages re-weighted" in ok.output
    missing = CliRunner().invoke(app, ["reweight-bm25", "nope"])
    assert missing.exit_code == 2 and "unknown corpus 'nope'" in missing.output



def test_every_reweight_leaves_the_corpus_optimised(pipe, monkeypatch):
    """The engine copies a rewritten point out of its indexed segment, so a re-weight that does not optimise
    leaves the corpus searched by full scans until some later job: a deletion's re-weight and the one on
    request (as a cancel's and the start's, all through ``bm25_stats.reweight``) optimise after their rewrite."""
    pipe.corpora.create_corpus("c", CorpusConfig(spaces=SPACES))
    pipe.ingest.file_bytes("c", words_pdf(4, 3, 50), "short.pdf")
    long_doc = pipe.ingest.file_bytes("c", words_pdf(6, 3, 600), "long.pdf").document
    calls: list[str] = []
    for name in ("update_vectors", "optimize"):
        real = getattr(pipe.store, name)
        monkeypatch.setattr(pipe.store, name,
                            lambda *a, _real=real, _name=name, **k: (calls.append(_name), _real(*a, **k))[1])

    pipe.corpora.delete_document("c", long_doc.id)  # the average moves back: re-weighted inside the deletion
    assert "update_vectors" in calls and calls[-1] == "optimize", calls
    calls.clear()
    done = pipe.corpora.reweight_bm25("c")
    assert calls[0] == "update_vectors" and calls[-1] == "optimize", calls
    assert done.pages == 3 and 0 <= done.optimize_seconds <= done.seconds


OLD_SCHEMA = """
CREATE TABLE corpora (name TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE documents (corpus TEXT NOT NULL, id TEXT NOT NULL, filename TEXT NOT NULL, media_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL, page_count INTEGER NOT NULL, metadata TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (corpus, id));
CREATE TABLE pages (corpus TEXT NOT NULL, id TEXT NOT NULL, document_id TEXT NOT NULL, number INTEGER NOT NULL,
    width INTEGER NOT NULL, height INTEGER NOT NULL, image_hash TEXT NOT NULL, text_source TEXT NOT NULL,
    text TEXT NOT NULL, words TEXT NOT NULL, PRIMARY KEY (corpus, id));
"""


def test_an_old_catalog_keeps_its_fixed_300_and_gains_the_statistics(tmp_path):
    db = sqlite3.connect(tmp_path / "catalog.sqlite3")
    db.executescript(OLD_SCHEMA)
    old = '{"spaces": ["text", "bm25"], "description": "", "pool_factor": 1, "bm25_avg_len": 300.0}'
    texts = ["Revenue grew in the quarter as cloud services grew.", "The dividend and the share repurchase."]
    for corpus, config in (("old", old), ("auto", '{"spaces": ["text", "bm25"]}')):
        db.execute("INSERT INTO corpora VALUES (?, ?, 0)", (corpus, config))
        db.execute("INSERT INTO documents VALUES (?, 'd1', 'a.pdf', 'application/pdf', 1, 2, '{}', 0)", (corpus,))
        for i, text in enumerate(texts):
            db.execute("INSERT INTO pages VALUES (?, ?, 'd1', ?, 1, 1, 'h', 'layer', ?, '')",
                       (corpus, f"p{i}", i + 1, text))
    db.commit()
    db.close()

    catalog = Catalog(tmp_path)
    assert catalog.corpora.config("old").bm25_avg_len == 300.0
    assert catalog.corpora.config("auto").bm25_avg_len is None
    assert catalog.bm25.documents_without_length("auto") == ["d1"]
    mean = sum(bm25_length(t) for t in texts) / 2
    assert bm25_stats.corpus_avg_len(catalog, "auto") == pytest.approx(mean)
    assert catalog.bm25.documents_without_length("auto") == []
    assert catalog.bm25.totals("auto") == Bm25Totals(2, sum(bm25_length(t) for t in texts))
    catalog.documents.delete("auto", "d1")
    assert catalog.bm25.totals("auto") == Bm25Totals(0, 0) and bm25_stats.corpus_avg_len(catalog, "auto") is None
    catalog.close()


def test_the_first_batch_of_an_empty_corpus_uses_its_own_average():
    texts = ["revenue margin quarter " * 5, "cloud devices services " * 30]
    own = Bm25Space(None).text_vectors(texts)
    avg = (bm25_length(texts[0]) + bm25_length(texts[1])) / 2
    assert own == Bm25Space(avg).text_vectors(texts)
    assert own != Bm25Space(300).text_vectors(texts)


def test_ingestion_and_reweight_index_the_same_text_with_the_section_context(tmp_path):
    from mmrag.config import IngestConfig
    from mmrag.jobs.embedding import embed_pages
    from mmrag.types import Document, Page, TextSource

    page = Page(id="a" * 32, document_id="d" * 32, number=1, width=10, height=10, image_hash="h",
                text="Cash flow from operations grew.", words=[], text_source=TextSource.LAYER,
                context=["Item 2. Management's Discussion", "Liquidity and Capital Resources"])
    doc = Document(id="d" * 32, filename="a.pdf", media_type="application/pdf", size_bytes=1, pages=[page])
    ingested = embed_pages(doc, {"bm25": Bm25Space(100.0)}, ["bm25"], IngestConfig())[0].vectors["bm25"]
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    catalog.documents.add("c", doc)
    (stored,) = catalog.pages.texts("c")
    text, context = stored.text, stored.context
    assert [ingested] == Bm25Space(100.0).text_vectors([bm25_text(text, context)])
    assert ingested != Bm25Space(100.0).text_vectors([page.text])[0]  # the headings are indexed
    assert bm25_stats.document_length(doc) == (1, bm25_length(bm25_text(text, context)))
    catalog.close()
