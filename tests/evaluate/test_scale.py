"""The pure parts of the scale test (mmrag.evaluate.scale) against independent computations: document-level
nDCG from page hits vs pytrec_eval on each document's best page score, the paired ratio interval vs
scipy's bootstrap, and the selection of questions and corpus sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval  # declared dev dependency (PyPI pytrec-eval-terrier)
from scipy import stats

from mmrag.evaluate.metrics import query_metrics
from mmrag.evaluate.scale import (
    ScaleResult,
    corpus_sizes,
    group_questions,
    ranked_documents,
)
from mmrag.evaluate.stats import ratio_of_means
from mmrag.evaluate.suite import Query, Suite, SuiteSpec
from mmrag.evaluate.targets import Hit
from mmrag.types import DocumentInfo


def document_suite(queries: list[Query], qrels: dict[str, dict[str, int]]) -> Suite:
    spec = SuiteSpec.model_validate({"name": "t", "dataset": {"corpus": ".", "judge": "document"}})
    return Suite(spec=spec, path=Path("."), corpus_dir=Path("."), variant=None, queries=queries, qrels=qrels, qa=[])


def test_document_ndcg_equals_trec_eval_on_each_documents_best_page() -> None:
    rng = np.random.default_rng(7)
    names = [f"2023 Q{q} {c}.pdf" for q in (1, 2, 3) for c in ("AAPL", "MSFT", "NVDA")]
    qrels = {f"q{i}": {names[i]: 1} for i in range(len(names))}
    suite = document_suite([Query(q, q) for q in qrels], qrels)
    run: dict[str, dict[str, float]] = {}
    ours: dict[str, float] = {}
    for qid, judged in qrels.items():
        # several pages per document, scores rounded so that some documents tie on their best page
        hits = [Hit(name, page, float(np.round(rng.random(), 1))) for name in names for page in (1, 2, 3)
                if rng.random() < 0.6]
        run[qid] = {}
        for h in hits:
            run[qid][h.filename] = max(h.score, run[qid].get(h.filename, -1.0))
        ranked = ranked_documents(suite, hits)
        assert len(ranked) == len(set(ranked)) == len(run[qid])
        ours[qid] = query_metrics(ranked, judged, ["ndcg"], [5])["ndcg@5"]
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run)
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties exercised
    assert ours == pytest.approx({q: m["ndcg_cut_5"] for q, m in trec.items()}, abs=1e-9)


def test_pages_rank_by_score_and_keep_each_document_once() -> None:
    suite = document_suite([], {})
    hits = [Hit("a.pdf", 1, 0.2), Hit("b.pdf", 4, 0.9), Hit("a.pdf", 2, 0.5), Hit("c.pdf", 1, 0.5)]
    assert ranked_documents(suite, hits) == ["b.pdf", "c.pdf", "a.pdf"]  # tie 0.5: doc key descending


def test_ratio_of_means_and_its_interval_match_scipys_paired_bootstrap() -> None:
    rng = np.random.default_rng(3)
    small = rng.uniform(0.6, 1.0, 60)
    large = np.clip(small - rng.uniform(0.0, 0.4, 60), 0, 1)
    ours = ratio_of_means(large.tolist(), small.tolist(), samples=20_000)
    ref = stats.bootstrap((large, small), lambda a, b, axis=-1: a.mean(axis=axis) / b.mean(axis=axis),
                          paired=True, vectorized=True, n_resamples=20_000, method="percentile",
                          random_state=np.random.default_rng(11))
    assert ours.value == pytest.approx(large.mean() / small.mean(), rel=1e-12) and ours.n == 60
    assert ours.lo == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours.hi == pytest.approx(ref.confidence_interval.high, abs=0.01)
    assert ours.lo < ours.value < ours.hi
    with pytest.raises(ValueError, match="paired"):
        ratio_of_means([1.0, 0.5], [1.0])


def test_questions_and_corpus_sizes_of_a_group() -> None:
    queries = [Query("q1", "a", ["single-doc"]), Query("q2", "b", ["single-doc"]), Query("q3", "c", ["multi-doc"]),
               Query("q4", "d", ["single-doc"])]
    qrels = {"q1": {"2023 Q3 AAPL.pdf": 1}, "q2": {"2023 Q2 AAPL.pdf": 1},
             "q3": {"2023 Q3 AAPL.pdf": 1, "2023 Q3 MSFT.pdf": 1}}
    suite = document_suite(queries, qrels)
    group = {"2023 Q3 AAPL.pdf", "2023 Q3 MSFT.pdf"}
    assert [q.id for q in group_questions(suite, group)] == ["q1"]  # q3 is multi-doc, q4 has no judgment

    def doc(i: str, name: str) -> DocumentInfo:
        return DocumentInfo(i, "c", name, "application/pdf", 1, 1, {}, 0.0)

    reports = [doc("1", "2023 Q3 AAPL.pdf"), doc("2", "2023 Q3 MSFT.pdf"), doc("3", "2023 Q2 AAPL.pdf")]
    suite_names = {d.filename for d in reports}
    assert corpus_sizes(reports, group, suite_names) == {"group": ["1", "2"], "suite": ["1", "2", "3"]}
    assert corpus_sizes([*reports, doc("4", "R-intro.pdf")], group, suite_names) == {
        "group": ["1", "2"], "suite": ["1", "2", "3"], "all": None}


def test_scale_result_ratios_divide_by_the_first_size() -> None:
    result = ScaleResult({"document": {"group": [1.0, 1.0, 0.5], "suite": [1.0, 0.5, 0.5]},
                          "pages": {"group": [1.0, 0.5, 0.5], "suite": [0.5, 0.0, 0.5]}}, base="group")
    ratios = result.ratios()
    assert set(ratios) == {("document", "suite"), ("pages", "suite")}
    assert ratios["document", "suite"].value == pytest.approx(2.0 / 2.5)
    assert ratios["pages", "suite"].value == pytest.approx(1.0 / 2.0)
    assert result.mean("pages", "group") == pytest.approx(2.0 / 3)
