"""The learned ranker: its model file, and a real search that ranks every page of its best document."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from mmrag.errors import InvalidInput
from mmrag.retrieve.candidates import candidate_hit
from mmrag.retrieve.rank_features import ALL_FEATURES, FEATURES, CandidatePage
from mmrag.retrieve.ranker import SHIPPED, load_ranker, train_ranker
from mmrag.retrieve_config import RankingConfig
from mmrag.types import SearchRequest

STATEMENT = FEATURES.index("named_statement")  # the column the toy models learn from (named_statement)


def toy_model(tmp_path: Path, column: int = STATEMENT, features: tuple[str, ...] = FEATURES) -> Path:
    """A model that learned: pages meeting the statement the question names are the relevant ones."""
    rng = np.random.default_rng(0)
    rows = rng.random((600, len(features)), dtype=np.float32)
    rows[:, column] = rng.integers(0, 2, 600)
    path = tmp_path / "ranker.txt"
    train_ranker(rows, rows[:, column].copy(), [20] * 30, rounds=20, params={"min_data_in_leaf": 5},
                 features=features).save(path)
    return path


def test_a_saved_model_loads_scores_and_explains_itself(tmp_path: Path) -> None:
    ranker = load_ranker(toy_model(tmp_path))
    rows = np.zeros((2, len(FEATURES)), dtype=np.float32)
    rows[1, STATEMENT] = 1.0
    scores = ranker.score(rows)
    assert scores[1] > scores[0]
    contrib = ranker.contributions(rows)
    assert contrib.shape == (2, len(FEATURES) + 1)
    assert contrib.sum(axis=1) == pytest.approx(scores, abs=1e-6)  # SHAP values add up to the score
    assert ranker.score(np.zeros((0, len(FEATURES)), dtype=np.float32)).shape == (0,)


def test_a_model_of_other_features_or_no_model_is_refused_by_name(tmp_path: Path) -> None:
    import lightgbm

    rows = np.random.default_rng(1).random((100, 3))
    other = lightgbm.train({"objective": "lambdarank", "verbose": -1, "min_data_in_leaf": 5},
                           lightgbm.Dataset(rows, label=(rows[:, 0] > 0.5).astype(int), group=[10] * 10,
                                            feature_name=["a", "b", "c"]), num_boost_round=3)
    other.save_model(str(tmp_path / "old.txt"))
    with pytest.raises(InvalidInput, match="retrain it"):
        load_ranker(tmp_path / "old.txt")
    (tmp_path / "junk.txt").write_text("not a model")
    with pytest.raises(InvalidInput, match="not a LightGBM model"):
        load_ranker(tmp_path / "junk.txt")
    with pytest.raises(InvalidInput, match="cannot be read"):
        load_ranker(tmp_path / "missing.txt")


def test_rows_of_other_columns_than_the_features_are_refused() -> None:
    with pytest.raises(InvalidInput, match=f"columns for {len(ALL_FEATURES)} features"):
        train_ranker(np.zeros((4, len(FEATURES)), dtype=np.float32), np.zeros(4), [4], features=ALL_FEATURES)


def test_the_shipped_model_computes_todays_features() -> None:
    ranker = load_ranker(SHIPPED)
    assert tuple(ranker.booster.feature_name()) == FEATURES
    assert SHIPPED.stat().st_size < 2_000_000


@pytest.fixture()
def report(pipeline):
    doc = pymupdf.open()
    pages = ["Management's discussion. Cash flows from operating activities rose on working capital; dividends "
             "were paid to shareholders every quarter and the company bought back shares.",
             "Risk factors. Weather, currency and competition may affect our results in any year.",
             "Legal proceedings. The company is a party to several lawsuits arising in the ordinary course.",
             "Consolidated Statements of Cash Flows Years ended December 31 (Millions) 2016 2015 Net income 5,058 "
             "4,833 Purchases of property, plant and equipment (1,420) (1,461) Cash dividends paid (2,678) (2,561)"]
    for text in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), text)
    other = pymupdf.open()
    other.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), "A cookbook: dividends of flavour paid daily.")
    pipeline.corpora.create_corpus("r")
    pipeline.ingest.file_bytes("r", doc.tobytes(), "report.pdf")
    pipeline.ingest.file_bytes("r", other.tobytes(), "cookbook.pdf")
    return pipeline


def test_the_search_ranks_every_page_of_its_best_document_by_the_model(report, tmp_path: Path) -> None:
    retriever = report.retriever
    query = "How much did the company pay in dividends in 2016, per its cash flow statement?"
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(
        ranker=str(toy_model(tmp_path)), rank_depth=1, rank_documents=1)})
    request = SearchRequest(query=query, top_k=1, explain=True)
    spaces, names, text, fit, node = retriever.prepare("r", request)
    candidates = retriever.candidates("r", spaces, names, text, fit, node, request)
    # one first-stage page, then every page of its document (and nothing of the other document)
    assert sorted(c.page for c in candidates) == [1, 2, 3, 4] and len({c.document_id for c in candidates}) == 1
    assert sum(c.fused_rank is not None for c in candidates) == 1
    assert all("text" in c.scores for c in candidates)  # each space scored the whole set
    got = report.search("r", request).evidence
    assert [(Path(e.filename).name, e.page) for e in got] == [("report.pdf", 4)]
    top = got[0]
    contributions = {k: v for k, v in top.scores.items() if k.startswith("ranker.")}
    assert set(contributions) == {f"ranker.{f}" for f in (*FEATURES, "bias")}
    assert sum(contributions.values()) == pytest.approx(top.score, abs=1e-3)
    assert contributions["ranker.named_statement"] > 0
    assert "dividends" in top.snippet.lower()
    many = report.search("r", SearchRequest(query=query, top_k=5)).evidence
    assert [e.score for e in many] == sorted((e.score for e in many), reverse=True) and many[0].page == 4


def test_a_model_of_the_reference_features_ranks_the_page_the_question_names_by_number(report, tmp_path) -> None:
    retriever = report.retriever
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(
        ranker=str(toy_model(tmp_path / "base")), rank_depth=5, rank_documents=2)})
    report.search("r", SearchRequest(query="What does page 2 say about dividends paid?"))  # traits kept, no labels
    path = toy_model(tmp_path, ALL_FEATURES.index("ref_page"), ALL_FEATURES)
    assert load_ranker(path).features == ALL_FEATURES
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(
        ranker=str(path), rank_depth=5, rank_documents=2)})
    got = report.search("r", SearchRequest(query="What does page 2 of the report say about dividends paid?",
                                           top_k=1, explain=True)).evidence
    assert [(Path(e.filename).name, e.page) for e in got] == [("report.pdf", 2)]
    assert got[0].scores["ranker.ref_page"] > 0 and "ranker.ref_caption" in got[0].scores


def test_a_configured_model_that_is_missing_stops_the_start_and_a_broken_one_is_unavailable(report, tmp_path):
    from mmrag.errors import Unavailable
    from mmrag.retrieve.search import Retriever

    r = report.retriever
    missing = r.config.model_copy(update={"ranking": RankingConfig(ranker=str(tmp_path / "nope.txt"))})
    with pytest.raises(InvalidInput, match="no such model file; give shipped, off"):
        Retriever(r.catalog, r.store, r.spaces, missing, r.ingest)
    broken = tmp_path / "broken.txt"
    broken.write_text("tree\nnot really")
    r.config = r.config.model_copy(update={"ranking": RankingConfig(ranker=str(broken))})
    with pytest.raises(Unavailable, match="not a LightGBM model; set MMRAG_RETRIEVE__RANKING__RANKER"):
        report.search("r", SearchRequest(query="dividends paid"))
    r.config = r.config.model_copy(update={"ranking": RankingConfig(ranker="off")})
    assert report.search("r", SearchRequest(query="dividends paid")).evidence  # the old first stage


def test_a_page_without_text_among_the_ranked_pages_comes_back_whole(report, tmp_path: Path) -> None:
    """The candidates' scoring queries read a few payload fields; the ranked top pages get their full payload
    back, a page that has no text vectors (blank) through the store's scroll."""
    doc = pymupdf.open()
    doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), "Zanzibar clove harvest tonnage per season.")
    doc.new_page()  # blank: no words, so no text vectors
    report.ingest.file_bytes("r", doc.tobytes(), "cloves.pdf")
    retriever = report.retriever
    retriever.config = retriever.config.model_copy(update={"ranking": RankingConfig(
        ranker=str(toy_model(tmp_path)), rank_depth=1, rank_documents=1)})
    got = report.search("r", SearchRequest(query="Zanzibar clove harvest tonnage", top_k=5)).evidence
    assert ("cloves.pdf", 2) in {(Path(e.filename).name, e.page) for e in got}  # the blank page, whole
    assert all(e.document_id and e.kind for e in got)


def test_a_page_deleted_after_the_candidates_query_is_left_out(report) -> None:
    """A document deleted between the candidates' scoring query and the full-payload read (a delete running
    beside the search: seen as a 500 in the soak, bench/soak.py) leaves its pages out, not half-read."""
    retriever = report.retriever
    request = SearchRequest(query="dividends paid", top_k=5)
    spaces, names, query, _, _ = retriever.prepare("r", request)
    got = report.search("r", request).evidence
    gone = next(e for e in got if e.filename == "cookbook.pdf")
    kept = next(e for e in got if e.filename == "report.pdf")
    hits = [candidate_hit(CandidatePage(e.page_id, e.document_id, e.page, fused_rank=None), 1.0) for e in (gone, kept)]
    report.corpora.delete_document("r", gone.document_id)
    full = retriever.finish_hits("r", spaces, names, query, hits)
    assert [h.payload["page_id"] for h in full] == [kept.page_id] and full[0].payload["filename"] == "report.pdf"
