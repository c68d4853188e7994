"""Our retrieval metrics agree with pytrec_eval (trec_eval) on many random runs."""

from __future__ import annotations

import random

import pytest
import pytrec_eval  # declared dev dependency (PyPI pytrec-eval-terrier)

from mmrag.evaluate.metrics import (
    evaluate_run,
    mean_metrics,
    ndcg_at_k,
    parse_metric_key,
    query_metrics,
    rank_scores,
    ranking_to_scores,
)

KS = (1, 3, 5, 10, 20)
TREC_MEASURES = {"ndcg_cut", "P", "recall", "map_cut", "recip_rank", "success"}
TREC_NAME = {"ndcg": "ndcg_cut", "precision": "P", "recall": "recall", "map": "map_cut", "success": "success"}


def random_case(rng: random.Random, graded: bool, ties: bool) -> tuple[dict, dict]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(rng.randint(1, 8)):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(2, 40))]
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        grades = [rng.choice([0, 1, 2, 3] if graded else [0, 1]) for _ in judged]
        if max(grades) == 0:
            grades[0] = 1
        qrels[qid] = dict(zip(judged, grades, strict=True))
        retrieved = rng.sample(docs, rng.randint(0, len(docs)))
        if ties:
            run[qid] = {doc: float(rng.randint(0, 3)) for doc in retrieved}
        else:
            run[qid] = {doc: rng.random() for doc in retrieved}
    return qrels, run


def trec_values(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {f"{m}.{','.join(map(str, KS))}" for m in TREC_MEASURES - {"recip_rank"}}
    )
    return evaluator.evaluate(run)


def trec_mrr(qrels: dict, run: dict, k: int) -> dict[str, float]:
    # trec_eval has no recip_rank cutoff: truncate each run (its own ordering) to k first.
    cut = {qid: {doc: scores[doc] for doc in rank_scores(scores)[:k]} for qid, scores in run.items()}
    cut = {qid: scores for qid, scores in cut.items() if scores}
    values = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    return {qid: values.get(qid, {"recip_rank": 0.0})["recip_rank"] for qid in qrels}


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_agrees_with_pytrec_eval_on_random_runs(graded: bool, ties: bool) -> None:
    rng = random.Random(1000 * graded + 10 * ties + 7)
    for _ in range(150):
        qrels, run = random_case(rng, graded, ties)
        ours = evaluate_run(qrels, run, ks=KS)
        theirs = trec_values(qrels, {q: r for q, r in run.items() if r})
        for qid, values in ours.items():
            for key, value in values.items():
                name, k = parse_metric_key(key)
                if name == "mrr":
                    expected = trec_mrr(qrels, run, k)[qid]
                else:
                    expected = theirs.get(qid, {}).get(f"{TREC_NAME[name]}_{k}", 0.0)
                assert value == pytest.approx(expected, abs=1e-4), (qid, key, run[qid], qrels[qid])


def test_ties_break_by_doc_id_descending_like_trec_eval() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    assert rank_scores(run["q"]) == ["c", "b", "a"]
    ours = evaluate_run(qrels, run, names=["mrr", "precision"], ks=[1, 3])["q"]
    assert ours["mrr@3"] == pytest.approx(1 / 3)
    assert ours["precision@1"] == 0.0
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P.1"}).evaluate(run)["q"]
    assert trec["recip_rank"] == pytest.approx(1 / 3)
    assert trec["P_1"] == 0.0


def test_known_values() -> None:
    judgments = {"a": 2, "b": 1, "c": 0}
    values = query_metrics(["c", "a", "x", "b"], judgments, ks=[1, 2, 4])
    assert values["precision@1"] == 0.0
    assert values["precision@4"] == 0.5
    assert values["recall@2"] == 0.5
    assert values["mrr@4"] == 0.5
    assert values["map@4"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert (values["success@1"], values["success@2"]) == (0.0, 1.0)  # the first relevant doc is at rank 2
    ideal = 2 + 1 / 1.584962500721156
    assert values["ndcg@4"] == pytest.approx((2 / 1.584962500721156 + 1 / 2.321928094887362) / ideal)
    assert ndcg_at_k(["a", "b"], judgments, 2) == 1.0


def test_ranking_round_trip_and_duplicates() -> None:
    ranking = ["p3", "p1", "p3", "p2"]
    assert rank_scores(ranking_to_scores(ranking)) == ["p3", "p1", "p2"]
    # the duplicate p3 must not count twice
    assert query_metrics(ranking, {"p3": 1}, names=["precision"], ks=[2])["precision@2"] == 0.5


def test_queries_without_relevant_docs_are_skipped_and_missing_runs_score_zero() -> None:
    per_query = evaluate_run({"q1": {"a": 0}, "q2": {"a": 1}}, {}, ks=[5])
    assert list(per_query) == ["q2"]
    assert mean_metrics(per_query)["ndcg@5"] == 0.0


def test_bad_metric_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="allowed"):
        parse_metric_key("ndcg5")
    with pytest.raises(ValueError, match="allowed"):
        query_metrics(["a"], {"a": 1}, names=["bleu"])


def test_the_rankers_page_metrics_agree_with_trec_eval_and_read_the_first_pages_document():
    from mmrag.evaluate.rank_data import page_metrics

    rng = random.Random(7)
    evaluator_measures = {"ndcg_cut", "recall"}
    for _ in range(50):
        pages = [f"f{d}.pdf#{p}" for d in range(4) for p in range(1, 12)]
        judged = {k: rng.choice([1, 2]) for k in rng.sample(pages, rng.randint(1, 4))}
        ranking = rng.sample(pages, rng.randint(1, len(pages)))
        got = page_metrics(ranking, judged)
        run = {"q": {k: float(len(ranking) - i) for i, k in enumerate(ranking)}}
        trec = pytrec_eval.RelevanceEvaluator({"q": judged}, evaluator_measures).evaluate(run)["q"]
        assert got["ndcg@5"] == pytest.approx(trec["ndcg_cut_5"], abs=1e-9)
        assert got["recall@10"] == pytest.approx(trec["recall_10"], abs=1e-9)
        assert got["outside10"] == float(not set(ranking[:10]) & set(judged))
        assert got["doc_first"] == float(ranking[0].split("#")[0] in {k.split("#")[0] for k in judged})
    assert page_metrics(["a.pdf#3", "b.pdf#1"], {"b.pdf#2": 1})["doc_first"] == 0.0
    assert page_metrics(["b.pdf#3", "a.pdf#1"], {"b.pdf#2": 1, "a.pdf#1": 0})["doc_first"] == 1.0
