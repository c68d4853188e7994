"""The scale test (issue 15): does document-level ranking hold as look-alike and unrelated documents are added?

Questions about one **group** of documents (e.g. one quarter's five reports) are asked over corpora of
growing size, the same questions in every size, through the same search and scoring the suite runner
uses: the group alone (``document_ids`` = the group), the suite's own documents (look-alike distractors),
and the whole corpus (no filter: the suite's documents plus unrelated ones). Each question scores a
document-level metric (``ndcg@5``: documents ranked by their best page, ties by the runner's
convention); a size's quality relative to the group alone is ``mean(size) / mean(group)`` with a paired
percentile-bootstrap interval over questions.

Pure functions, except :func:`question_scores` and :func:`scale_test`, which search.
Callers: ``bench/doc_scale.py`` (full size), ``bench/doc_weights.py`` (per-question scores),
``tests/retrieve/test_doc_scale_small.py`` (CI size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mmrag.application import Application
from mmrag.evaluate.metrics import parse_metric_key, query_metrics
from mmrag.evaluate.runner import as_target, order_by_score
from mmrag.evaluate.stats import Estimate, ratio_of_means
from mmrag.evaluate.suite import Query, Suite
from mmrag.evaluate.targets import Hit, SearchOutcome, SearchPipeline
from mmrag.types import DocumentInfo, SearchRequest

SPACE_ARMS: dict[str, list[str]] = {"document": ["text", "bm25", "document"], "pages": ["text", "bm25"]}
"""The two rankings compared: with the document stage, and the page spaces alone (today's default before it)."""


def group_questions(suite: Suite, group: Collection[str], tag: str = "single-doc") -> list[Query]:
    """The questions tagged ``tag`` whose judged documents (basenames) all belong to ``group``."""
    return [q for q in suite.queries if tag in q.tags and suite.qrels.get(q.id)
            and all(name in group for name in suite.qrels[q.id])]


def corpus_sizes(documents: Sequence[DocumentInfo], group: Collection[str],
                 suite_documents: Collection[str]) -> dict[str, list[str] | None]:
    """Document ids per corpus size: ``group`` (the group's documents), ``suite`` (the suite's own documents)
    and, when the corpus holds documents the suite does not (distractors), ``all`` (None: no filter)."""
    sizes: dict[str, list[str] | None] = {
        "group": [d.id for d in documents if d.filename in group],
        "suite": [d.id for d in documents if d.filename in suite_documents],
    }
    if any(d.filename not in suite_documents for d in documents):
        sizes["all"] = None
    return sizes


def ranked_documents(suite: Suite, hits: Sequence[Hit]) -> list[str]:
    """The judged keys of ``hits`` in rank order (the runner's: by score unless the suite ranks as returned),
    each once: at document level, documents by their best page."""
    keyed = [(suite.doc_key(h.filename, h.page), h) for h in hits]
    if suite.spec.metrics.rank_by == "score":
        keyed = order_by_score(keyed)
    return list(dict.fromkeys(key for key, _ in keyed))


def question_scores(pipeline: Application | SearchPipeline, suite: Suite, questions: Sequence[Query],
                    template: SearchRequest, metric: str = "ndcg@5") -> list[float]:
    """``metric`` of each question, searched with ``template`` (its query replaced by the question's)."""
    name, k = parse_metric_key(metric)
    target = as_target(pipeline)
    out = []
    for q in questions:
        outcome = SearchOutcome.of(target.search(suite.corpus_name, dataclasses.replace(template, query=q.text)))
        out.append(query_metrics(ranked_documents(suite, outcome.hits), suite.qrels[q.id], [name], [k])[metric])
    return out


@dataclass(frozen=True, slots=True)
class ScaleResult:
    """Per ranking arm and corpus size, the per-question metric (same questions, same order, in every cell)."""

    scores: dict[str, dict[str, list[float]]]  # arm (SPACE_ARMS key) -> size -> per question
    base: str  # the size the ratios divide by (the smallest corpus)

    def mean(self, arm: str, size: str) -> float:
        return float(np.mean(self.scores[arm][size]))

    def ratio(self, arm: str, size: str, *, samples: int = 10_000, seed: int = 0) -> Estimate:
        """``size`` over the base size for ``arm``, paired over questions."""
        return ratio_of_means(self.scores[arm][size], self.scores[arm][self.base], samples=samples, seed=seed)

    def ratios(self) -> dict[tuple[str, str], Estimate]:
        return {(arm, size): self.ratio(arm, size) for arm, by_size in self.scores.items()
                for size in by_size if size != self.base}


def scale_test(pipeline: Application | SearchPipeline, suite: Suite, questions: Sequence[Query],
               sizes: Mapping[str, list[str] | None], *, arms: Mapping[str, list[str]] = SPACE_ARMS,
               top_k: int | None = None, metric: str = "ndcg@5") -> ScaleResult:
    """Every question over every corpus size (the first is the base) with every arm's spaces.
    ``top_k``: pages per search (default the suite's: documents rank by their best page among them)."""
    if not questions or not sizes:
        raise ValueError("the scale test needs questions and at least one corpus size")
    k = top_k or suite.spec.pipeline.top_k
    scores = {arm: {size: question_scores(pipeline, suite, questions,
                                          SearchRequest(query="", top_k=k, spaces=list(spaces), document_ids=ids),
                                          metric)
                    for size, ids in sizes.items()}
              for arm, spaces in arms.items()}
    return ScaleResult(scores, next(iter(sizes)))
