"""bench.rank_folds: training-only suites are never scored, and the per-tag breakdown pairs each question's
ranker score with today's order and with another run's ranking."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.rank_folds import by_tag, run_rankings
from mmrag.evaluate.rank_data import QuestionRows, QuestionScore, cross_validate
from mmrag.retrieve.rank_features import FEATURES


def question(qid: str, fold: str, keys: list[str], judged: dict[str, int], suite: str = "s") -> QuestionRows:
    rows = np.random.default_rng(len(qid)).normal(size=(len(keys), len(FEATURES))).astype(np.float32)
    for i, k in enumerate(keys):
        rows[i, 0] += 5 * judged.get(k, 0)
    return QuestionRows(query_id=qid, fold=fold, suite=suite, rows=rows,
                        labels=np.asarray([judged.get(k, 0) for k in keys], dtype=np.float32), keys=keys,
                        first=np.ones(len(keys), dtype=bool), baseline=keys[:10], judged=judged, features=FEATURES)


def test_extra_training_questions_are_never_scored() -> None:
    scored = [question(f"q{i}", ["brochure", "guidebook"][i % 2], [f"d{i}.pdf#{p}" for p in range(1, 6)],
                       {f"d{i}.pdf#{1 + i % 5}": 1}) for i in range(6)]
    extra = [question(f"f{i}", "10-K", [f"f{i}.pdf#{p}" for p in range(1, 6)], {f"f{i}.pdf#{1 + i % 5}": 1},
                      suite="filings") for i in range(4)]
    got = cross_validate(scored, [*scored, *extra], rounds=10, params={"min_data_in_leaf": 1})
    assert sorted(s.query_id for s in got) == sorted(q.query_id for q in scored)
    assert {s.suite for s in got} == {"s"}


def test_by_tag_pairs_the_ranker_with_todays_order_and_another_run(tmp_path: Path) -> None:
    judged = {"a.pdf#2": 1}
    q1 = question("q1", "brochure", ["a.pdf#1", "a.pdf#2"], judged)
    q2 = question("q2", "brochure", ["a.pdf#1", "a.pdf#2"], judged)
    first, second = {"ndcg@5": 1.0}, {"ndcg@5": 1 / np.log2(3)}
    scores = [QuestionScore("q1", "brochure", "s", second, first, 1.0),
              QuestionScore("q2", "brochure", "s", first, first, 1.0)]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps({"id": i, "ranking": [{"doc": "a.pdf#1"},
                                                                                      {"doc": "a.pdf#2"}]})
                                                      for i in ("q1", "q2")) + "\n")
    versus = run_rankings(tmp_path)
    assert versus["q1"] == ["a.pdf#1", "a.pdf#2"]
    tags = {"q1": ["evidence:figure", "evidence:layout"], "q2": ["evidence:figure", "kind:brochure"]}
    got = by_tag(scores, [q1, q2], tags, "evidence", versus)
    assert got["evidence_figure_ndcg5"].value == 1.0
    assert np.isclose(got["evidence_figure_delta"].value, (1 - second["ndcg@5"]) / 2)
    assert np.isclose(got["evidence_layout_delta"].value, 1 - second["ndcg@5"])
    assert np.isclose(got["evidence_figure_vs_run"].value, 1 - second["ndcg@5"])  # the run put page 1 first
    assert not any(name.startswith("evidence_brochure") for name in got)
