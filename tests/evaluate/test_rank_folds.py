"""Leave-one-fold-out for the page ranker: folds by a tag family (company, kind), and no fold's ranker trains
on a page of a document the fold it scores asks about."""

from __future__ import annotations

import numpy as np

from mmrag.evaluate import rank_data
from mmrag.evaluate.queries import Query
from mmrag.evaluate.rank_data import (
    QuestionRows,
    cross_validate,
    documents_of,
    fold_training,
    question_fold,
    without_documents,
)
from mmrag.retrieve.rank_features import FEATURES


def question(qid: str, fold: str, keys: list[str], judged: dict[str, int]) -> QuestionRows:
    rows = np.arange(len(keys) * len(FEATURES), dtype=np.float32).reshape(len(keys), len(FEATURES))
    return QuestionRows(query_id=qid, fold=fold, suite="s", rows=rows,
                        labels=np.asarray([judged.get(k, 0) for k in keys], dtype=np.float32), keys=keys,
                        first=np.ones(len(keys), dtype=bool), baseline=keys[:10], judged=judged, features=FEATURES)


def test_a_question_folds_by_the_tag_family_asked_for_else_by_its_document() -> None:
    q = Query("q", "text", tags=["kind:brochure", "company:acme"])
    assert rank_data.company_tag(q, "kind") == "brochure" and rank_data.company_tag(q) == "acme"
    assert question_fold(Query("q", "text", tags=["kind:brochure"]), {"Report_2020.pdf#3": 1}) == "report_2020"


def test_training_rows_never_hold_a_page_of_a_document_the_scored_fold_asks_about(monkeypatch) -> None:
    shared = question("a1", "brochure", ["b.pdf#1", "shared.pdf#2", "b.pdf#2"], {"b.pdf#1": 1})
    asks_shared = question("k1", "guidebook", ["shared.pdf#2", "shared.pdf#5", "g.pdf#1"], {"shared.pdf#2": 1})
    other = question("k2", "guidebook", ["g.pdf#1", "g.pdf#2"], {"g.pdf#2": 1})
    assert documents_of([asks_shared, other]) == {"shared.pdf", "g.pdf"}
    trimmed = without_documents(shared, {"shared.pdf"})
    assert trimmed.keys == ["b.pdf#1", "b.pdf#2"] and trimmed.rows.shape == (2, len(FEATURES))
    assert trimmed.labels.tolist() == [1.0, 0.0] and trimmed.first.tolist() == [True, True]
    assert np.array_equal(trimmed.rows[1], shared.rows[2]) and without_documents(other, {"x.pdf"}) is other

    # fold brochure trains on the guidebook questions; fold guidebook on the brochure one without shared.pdf#2
    assert [q.query_id for q in fold_training([shared, asks_shared, other], [shared])] == ["k1", "k2"]
    (trained,) = fold_training([shared, asks_shared, other], [asks_shared, other])
    assert trained.keys == ["b.pdf#1", "b.pdf#2"]
    (kept,) = fold_training([asks_shared], [question("x", "brochure", ["g.pdf#1"], {"g.pdf#1": 1})])
    assert kept.keys == ["shared.pdf#2", "shared.pdf#5"] and kept.rows.shape == (2, len(FEATURES))
    assert fold_training([other], [asks_shared]) == []  # every candidate of it is in a document asked about


def test_leave_one_kind_out_scores_every_question_once_by_a_real_model() -> None:
    rng = np.random.default_rng(0)
    questions = []
    for i in range(12):
        keys = [f"d{i}.pdf#{p}" for p in range(1, 9)]
        q = question(f"q{i}", ["brochure", "guidebook", "paper"][i % 3], keys, {keys[i % 8]: 1})
        q.rows[:] = rng.normal(size=q.rows.shape)
        q.rows[i % 8, 0] += 5  # the judged page stands out on one feature in every fold
        questions.append(q)
    scores = cross_validate(questions, rounds=20, params={"min_data_in_leaf": 1})
    assert sorted(s.query_id for s in scores) == sorted(q.query_id for q in questions)
    assert np.mean([s.ranked["ndcg@5"] for s in scores]) > np.mean([s.baseline["ndcg@5"] for s in scores])
