"""Retrieval metrics as pure functions over plain dicts (trec_eval semantics).

Inputs follow pytrec_eval's shapes:

- ``qrels``: ``{query_id: {doc_id: relevance}}`` with integer grades; a grade
  ``>= 1`` is relevant, ``0`` (or negative) is judged non-relevant.
- ``run``: ``{query_id: {doc_id: score}}`` (higher is better), or a ranking
  ``{query_id: [doc_id, ...]}`` already in rank order.

**Tie-breaking convention.** A score dict is ranked by score descending, and
equal scores by doc id *descending* (string comparison), which is what
trec_eval does; so every metric here equals trec_eval's on the same run, ties
included. Runners of this package never produce ties: they keep the order the
pipeline returned (see :func:`ranking_to_scores`).

Definitions at a cutoff ``k`` (R = number of relevant docs of the query):

- ``precision@k`` = relevant in the top k / k (k, not the number retrieved)
- ``recall@k`` = relevant in the top k / R
- ``mrr@k`` = 1 / rank of the first relevant doc within the top k, else 0
- ``map@k`` = sum of precision@i at each relevant rank i <= k / R
- ``ndcg@k`` = DCG@k / IDCG@k with linear gain (the grade) and discount
  ``1 / log2(rank + 1)`` (trec_eval's ``ndcg_cut``); IDCG from all judged grades.
- ``success@k`` = 1 if a relevant doc is in the top k, else 0 (trec_eval's ``success``). In a
  suite judged at document level ``success@1`` is "right document ranked first".

Queries with no relevant document are skipped by :func:`evaluate_run` (trec_eval
skips them too); queries missing from the run score 0 (trec_eval ``-c``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]
Ranking = Sequence[str]

METRIC_NAMES = ("ndcg", "recall", "precision", "mrr", "map", "success")
"""Retrieval metric families; each is reported as ``<name>@<k>``."""


def rank_scores(scores: Mapping[str, float]) -> list[str]:
    """Doc ids by score descending; equal scores by doc id descending (trec_eval)."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def ranking_to_scores(ranking: Ranking) -> dict[str, float]:
    """Strictly decreasing scores that reproduce ``ranking`` exactly (first occurrence wins)."""
    scores: dict[str, float] = {}
    for doc in ranking:
        if doc not in scores:
            scores[doc] = float(len(ranking) - len(scores))
    return scores


def _relevant(judgments: Mapping[str, int]) -> set[str]:
    return {doc for doc, grade in judgments.items() if grade >= 1}


def precision_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judgments)
    return sum(1 for doc in ranking[:k] if doc in relevant) / k


def recall_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judgments)
    if not relevant:
        return 0.0
    return sum(1 for doc in ranking[:k] if doc in relevant) / len(relevant)


def mrr_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judgments)
    for rank, doc in enumerate(ranking[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def map_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judgments)
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for rank, doc in enumerate(ranking[:k], start=1):
        if doc in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def success_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    relevant = _relevant(judgments)
    return 1.0 if any(doc in relevant for doc in ranking[:k]) else 0.0


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain of gains in rank order (discount 1/log2(rank+1))."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranking: Ranking, judgments: Mapping[str, int], k: int) -> float:
    ideal = sorted((g for g in judgments.values() if g > 0), reverse=True)[:k]
    idcg = dcg(ideal)
    if idcg == 0:
        return 0.0
    gains = [max(judgments.get(doc, 0), 0) for doc in ranking[:k]]
    return dcg(gains) / idcg


_FUNCTIONS = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "mrr": mrr_at_k,
    "map": map_at_k,
    "success": success_at_k,
}


def metric_key(name: str, k: int) -> str:
    """The report key of a metric at a cutoff, e.g. ``ndcg@5``."""
    return f"{name.lower()}@{k}"


def parse_metric_key(key: str) -> tuple[str, int]:
    """``"ndcg@5"`` -> ``("ndcg", 5)``; raises ValueError for anything else."""
    name, sep, k = key.partition("@")
    if not sep or name not in _FUNCTIONS or not k.isdigit() or int(k) < 1:
        raise ValueError(f"unknown retrieval metric {key!r}; allowed: <{'|'.join(METRIC_NAMES)}>@<k>=1,2,...")
    return name, int(k)


def query_metrics(
    ranking: Ranking,
    judgments: Mapping[str, int],
    names: Sequence[str] = METRIC_NAMES,
    ks: Sequence[int] = (1, 3, 5, 10),
) -> dict[str, float]:
    """Every ``name@k`` of one query's ranking (duplicates after the first are dropped)."""
    unique = list(dict.fromkeys(ranking))
    out: dict[str, float] = {}
    for name in names:
        if name not in _FUNCTIONS:
            raise ValueError(f"unknown retrieval metric {name!r}; allowed: {', '.join(METRIC_NAMES)}")
        for k in ks:
            if k < 1:
                raise ValueError(f"cutoff k must be >= 1, got {k}")
            out[metric_key(name, k)] = _FUNCTIONS[name](unique, judgments, k)
    return out


def as_ranking(entry: Mapping[str, float] | Ranking) -> list[str]:
    """A run entry (score dict or ranked list) as a ranked list of doc ids."""
    if isinstance(entry, Mapping):
        return rank_scores(entry)
    return list(entry)


def evaluate_run(
    qrels: Qrels,
    run: Mapping[str, Mapping[str, float] | Ranking],
    names: Sequence[str] = METRIC_NAMES,
    ks: Sequence[int] = (1, 3, 5, 10),
) -> dict[str, dict[str, float]]:
    """Per-query metrics for every query of ``qrels`` that has a relevant doc."""
    per_query: dict[str, dict[str, float]] = {}
    for qid, judgments in qrels.items():
        if not _relevant(judgments):
            continue
        ranking = as_ranking(run.get(qid, []))
        per_query[qid] = query_metrics(ranking, judgments, names, ks)
    return per_query


def mean_metrics(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Arithmetic mean of each metric over queries (empty input: empty dict)."""
    if not per_query:
        return {}
    keys = next(iter(per_query.values())).keys()
    n = len(per_query)
    return {key: sum(values[key] for values in per_query.values()) / n for key in keys}
