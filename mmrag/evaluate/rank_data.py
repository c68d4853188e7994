"""Training and evaluation data of the learned page ranker, from a suite with page judgments.

For every judged question the retriever's own candidates and feature rows are collected
(:meth:`mmrag.retrieve.search.Retriever.candidates` and
:func:`mmrag.retrieve.rank_features.feature_matrix`: the code a search runs), labelled with the
question's page judgments (0 for a page nobody judged); a question with a scope (:mod:`.scope`) is
searched within it, as the suite runs it. Each question belongs to a *fold*: its company (a
``company:<name>`` tag; or another tag family, ``fold_by="kind"`` reads ``kind:<kind>``) or, where questions
carry none, its judged document's family (the document's file name without extension), so that a ranker is
always scored on companies, kinds or documents it was not trained on (:func:`fold_split`), and never trains
on a page of a document the fold it scores asks about (:func:`cross_validate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mmrag.errors import InvalidInput
from mmrag.evaluate.scope import scope_filters
from mmrag.evaluate.suite import Query, Suite
from mmrag.retrieve.rank_features import ALL_FEATURES, FEATURES, feature_columns, feature_matrix
from mmrag.retrieve.search import Retriever
from mmrag.types import SearchRequest


@dataclass(slots=True)
class QuestionRows:
    """One judged question's candidates."""

    query_id: str
    fold: str  # company or document family
    suite: str
    rows: np.ndarray  # (candidates, len(features))
    labels: np.ndarray  # (candidates,) graded relevance, 0 unjudged
    keys: list[str]  # ``file.pdf#page`` per candidate
    first: np.ndarray  # (candidates,) bool: in the fused first stage (else added as a page of a top document)
    baseline: list[str]  # page keys in the order of today's default without the ranker (first 10)
    judged: dict[str, int] = field(default_factory=dict)  # every judged page (some may not be candidates)
    features: tuple[str, ...] = ALL_FEATURES  # the columns of ``rows``


@dataclass(frozen=True, slots=True)
class JudgedQuestion:
    """A question with page judgments: from a suite (:func:`suite_questions`) or a user's own list
    (``POST /corpora/{name}/ranker``)."""

    id: str
    text: str
    judged: dict[str, int]  # ``file.pdf#page`` (basename, 1-based page) -> grade
    group: str | None = None  # its fold (company); None: the family of its best-judged document
    document_ids: list[str] | None = None  # searched only within these documents (a suite query's scope)
    pages: tuple[int, int] | None = None  # ... and these pages (1-based, inclusive)

    @property
    def fold(self) -> str:
        if self.group:
            return self.group
        best = max(self.judged.items(), key=lambda kv: (kv[1], kv[0]))[0] if self.judged else self.id
        return Path(best.partition("#")[0]).stem.lower()


def page_judgments(suite: Suite, query_id: str) -> dict[str, int]:
    """``file.pdf#page`` -> grade for one question (a document suite's page judgments, else its qrels)."""
    if suite.spec.dataset.judge == "document":
        return dict(suite.page_qrels.get(query_id, {}))
    return {k: v for k, v in suite.qrels.get(query_id, {}).items() if "#" in k}


def question_fold(query: Query, judged: Mapping[str, int]) -> str:
    """The question's company tag, else the family of its best-judged document."""
    return JudgedQuestion(query.id, query.text, dict(judged), company_tag(query)).fold


def company_tag(query: Query, family: str = "company") -> str | None:
    """The value of the query's first ``<family>:<value>`` tag (``company:3m``, ``kind:brochure``); None if none."""
    for tag in query.tags:
        if tag.startswith(f"{family}:") and tag != f"{family}:":
            return tag.removeprefix(f"{family}:")
    return None


def suite_questions(suite: Suite, fold_by: str = "company") -> list[JudgedQuestion]:
    """The questions of ``suite`` that carry page judgments, each within its scope; folds by their
    ``<fold_by>:`` tag (else by document family)."""
    out = []
    ids = suite.scope_ids()
    for query in suite.queries:
        judged = page_judgments(suite, query.id)
        if judged:
            scope = scope_filters(query.scope, ids)
            out.append(JudgedQuestion(query.id, query.text, judged, company_tag(query, fold_by),
                                      scope.get("document_ids"), scope.get("pages")))
    return out


def collect_questions(retriever: Retriever, corpus: str, questions: Sequence[JudgedQuestion],
                      spaces: list[str] | None = None, suite: str = "",
                      progress: Callable[[int, int], None] | None = None) -> list[QuestionRows]:
    """The candidates, feature rows and labels of every question searched in ``corpus`` (the code a
    search runs); ``progress(done, total)`` after each."""
    out = []
    files: dict[str, str] = {}  # document id -> its file's name (the judgments' key)
    for i, question in enumerate(questions):
        request = SearchRequest(query=question.text, top_k=10, spaces=spaces, document_ids=question.document_ids,
                                pages=question.pages)
        space_map, names, qin, fit, node = retriever.prepare(corpus, request)
        baseline = [f"{Path(h.payload['filename']).name}#{h.payload['page']}"  # on a copy: both set its limit
                    for h in retriever.prior_ranked(corpus, names, qin, replace(node), request)[0]]
        candidates = retriever.candidates(corpus, space_map, names, qin, fit, node, request, extended=True)
        for doc in {c.document_id for c in candidates} - files.keys():
            files[doc] = Path(retriever.catalog.documents.get(corpus, doc).filename).name
        keys = [f"{files[c.document_id]}#{c.page}" for c in candidates]
        out.append(QuestionRows(
            query_id=question.id, fold=question.fold, suite=suite,
            rows=feature_matrix(qin.text, candidates, ALL_FEATURES),
            labels=np.asarray([question.judged.get(k, 0) for k in keys], dtype=np.float32), keys=keys,
            first=np.asarray([c.fused_rank is not None for c in candidates], dtype=bool),
            baseline=baseline, judged=question.judged,
        ))
        if progress is not None:
            progress(i + 1, len(questions))
    return out


def collect_suite(retriever: Retriever, suite: Suite, corpus: str | None = None,
                  fold_by: str = "company") -> list[QuestionRows]:
    """:func:`collect_questions` of a suite's judged questions (default corpus: the suite's eval corpus)."""
    return collect_questions(retriever, corpus or suite.corpus_name, suite_questions(suite, fold_by),
                             spaces=suite.spec.pipeline.spaces, suite=suite.name)


def question_columns(question: QuestionRows, features: Sequence[str]) -> np.ndarray:
    """The question's rows, columns ``features`` (of those it was collected with)."""
    if tuple(features) == question.features:
        return question.rows
    held = {name: i for i, name in enumerate(question.features)}
    feature_columns(features)  # InvalidInput for a name no version computes
    missing = [n for n in features if n not in held]
    if missing:
        raise InvalidInput(f"question {question.query_id} was collected without features {missing}; collect it again")
    return question.rows[:, [held[n] for n in features]]


def stack(questions: Sequence[QuestionRows], features: Sequence[str] = FEATURES
          ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Rows (columns ``features``), labels and group sizes of ``questions`` (in order) for
    :func:`mmrag.retrieve.ranker.train_ranker`."""
    if not questions:
        return np.zeros((0, len(features)), dtype=np.float32), np.zeros(0, dtype=np.float32), []
    rows = np.concatenate([question_columns(q, features) for q in questions])
    labels = np.concatenate([q.labels for q in questions])
    return rows, labels, [len(q.keys) for q in questions]


def ranked_keys(question: QuestionRows, scores: np.ndarray) -> list[str]:
    """The question's candidate keys by ``scores`` (best first; ties by key, as the search orders page ids)."""
    order = sorted(range(len(question.keys)), key=lambda i: (-round(float(scores[i]), 6), question.keys[i]))
    return [question.keys[i] for i in order]


def fold_split(questions: Iterable[QuestionRows], held_out: str) -> tuple[list[QuestionRows], list[QuestionRows]]:
    """(training questions: every other fold, test questions: ``held_out``)."""
    train: list[QuestionRows] = []
    test: list[QuestionRows] = []
    for q in questions:
        (test if q.fold == held_out else train).append(q)
    return train, test


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """One question scored by today's order and by a ranker that never saw its fold."""

    query_id: str
    fold: str
    suite: str
    baseline: dict[str, float]  # ndcg@5, recall@5, recall@10, outside10 (1: no judged page in the top 10)
    ranked: dict[str, float]
    candidate_recall: float  # 1 when a judged page is among the candidates


def page_metrics(ranking: Sequence[str], judged: Mapping[str, int]) -> dict[str, float]:
    """Page nDCG@5, Recall@5, Recall@10, whether no judged page is in the top 10 and whether the first
    page is of a judged page's document (keys ``file#page``)."""
    from mmrag.evaluate.metrics import query_metrics

    got = query_metrics(list(ranking), dict(judged), ["ndcg", "recall"], [5, 10])
    top10 = set(ranking[:10])
    files = {k.rpartition("#")[0] for k, g in judged.items() if g > 0}
    return {"ndcg@5": got["ndcg@5"], "recall@5": got["recall@5"], "recall@10": got["recall@10"],
            "outside10": float(not any(k in top10 for k, g in judged.items() if g > 0)),
            "doc_first": float(bool(ranking) and ranking[0].rpartition("#")[0] in files)}


def score_questions(questions: Sequence[QuestionRows], scores: Sequence[np.ndarray]) -> list[QuestionScore]:
    """Each question's metrics by its baseline order and by ``scores`` (one array per question)."""
    return [QuestionScore(q.query_id, q.fold, q.suite, page_metrics(q.baseline, q.judged),
                          page_metrics(ranked_keys(q, s), q.judged),
                          float(any(q.judged.get(k, 0) > 0 for k in q.keys)))
            for q, s in zip(questions, scores, strict=True)]


def documents_of(questions: Iterable[QuestionRows]) -> set[str]:
    """The files (``file.pdf``) the questions' judged pages are in: the documents they ask about."""
    return {key.rpartition("#")[0] for q in questions for key, grade in q.judged.items() if grade > 0}


def without_documents(question: QuestionRows, files: set[str]) -> QuestionRows:
    """``question`` with no candidate page of ``files`` (a training question's rows beside a fold that asks about
    them: a ranker never trains on a page of a document it is scored on)."""
    keep = [i for i, key in enumerate(question.keys) if key.rpartition("#")[0] not in files]
    if len(keep) == len(question.keys):
        return question
    return replace(question, rows=question.rows[keep], labels=question.labels[keep],
                   keys=[question.keys[i] for i in keep], first=question.first[keep])


def fold_training(pool: Iterable[QuestionRows], test: Sequence[QuestionRows]) -> list[QuestionRows]:
    """What a fold's ranker trains on: the questions of ``pool`` in other folds than ``test``'s, without any
    candidate page of a document ``test`` asks about (a question left with no candidate is dropped)."""
    folds, asked = {q.fold for q in test}, documents_of(test)
    return [t for q in pool if q.fold not in folds and len((t := without_documents(q, asked)).keys)]


def cross_validate(questions: Sequence[QuestionRows], trainable: Sequence[QuestionRows] | None = None,
                   features: Sequence[str] = FEATURES, **train_options: object) -> list[QuestionScore]:
    """Leave one fold out: each fold of ``questions`` scored by a ranker of ``features`` trained on every other
    fold of ``trainable`` (default ``questions``), without any candidate page of a document the fold asks about."""
    from mmrag.retrieve.ranker import train_ranker

    pool = list(trainable if trainable is not None else questions)
    out: list[QuestionScore] = []
    for fold in sorted({q.fold for q in questions}):
        test = [q for q in questions if q.fold == fold]
        train = fold_training(pool, test)
        ranker = train_ranker(*stack(train, features), features=features, **train_options)  # type: ignore[arg-type]
        out.extend(score_questions(test, [ranker.score(question_columns(q, features)) for q in test]))
    return out
