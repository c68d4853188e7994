"""A corpus's own page ranker, trained from its user's judged questions.

One path for the CLI (``mmrag rank train SUITE --corpus NAME``) and REST (``POST /corpora/{name}/ranker``):
the questions are searched in the corpus (:func:`mmrag.evaluate.rank_data.collect_questions`, the code a
search runs), each fold (company, else judged document family) is scored by a ranker trained on the
other folds (leave one fold out), and the ranker trained on every question becomes the corpus's own
(``RANKER_FILE`` in its folder) only when its paired 95 % lower bound on nDCG@5 is above 0, unless
forced. The report (``REPORT_FILE``) stays beside it: what the page and ``GET /corpora/{name}/ranker`` show.

:class:`RankerTraining` runs these trainings in the background, one per corpus at a time.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mmrag.catalog import Catalog
from mmrag.errors import Conflict, InvalidInput, MMRAGError, NotFound
from mmrag.evaluate.rank_data import JudgedQuestion, QuestionScore, collect_questions, cross_validate, stack
from mmrag.evaluate.stats import paired_bootstrap_ci
from mmrag.retrieve.rank_features import FEATURE_SETS, FEATURES
from mmrag.retrieve.search import RANKER_FILE, Retriever

if TYPE_CHECKING:
    from mmrag.retrieve.ranker import PageRanker

log = logging.getLogger(__name__)
REPORT_FILE = "page_ranker.json"
MIN_FOLDS = 2


class Folded(Protocol):
    """A judged question or its collected rows: both know their fold."""

    @property
    def fold(self) -> str: ...


@dataclass(frozen=True, slots=True)
class FoldResult:
    """One fold's page nDCG@5 by today's order (before) and by a ranker trained without it (after)."""

    fold: str
    questions: int
    before: float
    after: float


@dataclass(frozen=True, slots=True)
class TrainingReport:
    """What a training measured on the folds it was not trained on, and what it did."""

    questions: int
    folds: list[FoldResult]
    before: float  # mean page nDCG@5, today's order
    after: float  # mean page nDCG@5, each fold by a ranker that never saw it
    delta_low: float  # paired 95 % interval of after − before
    delta_high: float
    candidate_recall: float  # share of questions with a judged page among the candidates
    wins: bool  # delta_low > 0
    installed: bool = False  # the corpus now ranks with this model
    forced: bool = False
    trained_at: float = 0.0


def summarise(scores: Sequence[QuestionScore]) -> TrainingReport:
    """The folds' before/after table and the paired interval of ``scores`` (from :func:`cross_validate`)."""
    if not scores:
        raise InvalidInput("no question was scored")
    folds = []
    for fold in sorted({s.fold for s in scores}):
        rows = [s for s in scores if s.fold == fold]
        folds.append(FoldResult(fold, len(rows), _mean(r.baseline["ndcg@5"] for r in rows),
                                _mean(r.ranked["ndcg@5"] for r in rows)))
    before = [s.baseline["ndcg@5"] for s in scores]
    after = [s.ranked["ndcg@5"] for s in scores]
    low, high = paired_bootstrap_ci([a - b for a, b in zip(after, before, strict=True)])
    return TrainingReport(len(scores), folds, _mean(before), _mean(after), low, high,
                          _mean(s.candidate_recall for s in scores), low > 0)


def check_folds(questions: Sequence[Folded]) -> None:
    """A ranker is scored on folds it was not trained on: two folds at least (InvalidInput)."""
    folds = sorted({q.fold for q in questions})
    if len(folds) < MIN_FOLDS:
        raise InvalidInput(f"{len(questions)} judged questions in {len(folds)} fold(s) ({', '.join(folds) or 'none'}): "
                           "a ranker is scored on folds it was not trained on, so give questions about two "
                           "companies (group) or two documents at least")



def feature_set(name: str) -> tuple[str, ...]:
    """The features of a named set (``base``: the shipped model's; ``context``: also the page's coverage
    of the question and its neighbouring pages' scores; ``references``: also the question's page,
    slide, figure and table numbers); InvalidInput for another name."""
    if name not in FEATURE_SETS:
        raise InvalidInput(f"feature set {name!r}: one of {', '.join(sorted(FEATURE_SETS))}")
    return FEATURE_SETS[name]

def train_corpus_ranker(retriever: Retriever, corpus: str, questions: Sequence[JudgedQuestion], *,
                        force: bool = False, progress: Callable[[int, int], None] | None = None,
                        features: Sequence[str] = FEATURES) -> tuple[TrainingReport, PageRanker]:
    """Train a model of ``features`` on ``questions`` searched in ``corpus``; install it as the corpus's own when
    it wins beyond its interval on the folds it was not trained on (or ``force``); write the report beside it."""
    from mmrag.retrieve.ranker import train_ranker

    check_folds(questions)
    rows = collect_questions(retriever, corpus, questions, progress=progress)
    report = summarise(cross_validate(rows, features=features))
    model = train_ranker(*stack(rows, features), features=features)
    folder = retriever.catalog.corpora.folder(corpus)
    install = report.wins or force
    if install:
        model.save(folder / RANKER_FILE)
    report = replace(report, installed=install, forced=force and not report.wins, trained_at=time.time())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / REPORT_FILE).write_text(json.dumps(asdict(report), indent=1))
    return report, model


def check_judgments(catalog: Catalog, corpus: str, questions: Sequence[JudgedQuestion]) -> None:
    """Every judged ``file#page`` names a document of ``corpus`` and one of its pages (Conflict, with the
    corpus as it is, naming the first five that do not)."""
    pages: dict[str, int] = {}
    offset = 0
    while batch := catalog.documents.listed(corpus, offset=offset, limit=1000):
        for doc in batch:
            name = Path(doc.filename).name
            pages[name] = max(pages.get(name, 0), doc.page_count)
        offset += len(batch)
    bad = []
    for q in questions:
        for key in q.judged:
            name, _, page = key.rpartition("#")
            if name not in pages or not page.isdigit() or not 1 <= int(page) <= pages[name]:
                bad.append(f"{q.id}: {key}")
    if bad:
        raise Conflict(f"{len(bad)} judgment(s) name no page of corpus {corpus!r} (a judgment is "
                           f"'file name#page', the file's name as uploaded, pages from 1): {'; '.join(bad[:5])}")
    if not any(g > 0 for q in questions for g in q.judged.values()):
        raise InvalidInput("no judgment has a grade above 0: say which pages answer each question")


@dataclass(slots=True)
class TrainingJob:
    """A training of one corpus's ranker (``state``: queued, running, done, failed)."""

    id: str
    corpus: str
    questions: int
    force: bool
    state: str = "queued"
    done: int = 0  # questions searched so far
    error: str | None = None
    report: TrainingReport | None = None
    created_at: float = field(default_factory=time.time)


class RankerTraining:
    """Background trainings, one at a time (searching the questions is the cost; search goes on meanwhile),
    at most one per corpus queued or running. Lifecycle: built by the composition root, ``close`` at exit."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self._jobs: dict[str, TrainingJob] = {}  # corpus -> its latest training of this process
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ranker-training")

    def start(self, corpus: str, questions: Sequence[JudgedQuestion], force: bool = False) -> TrainingJob:
        catalog = self.retriever.catalog
        catalog.corpora.config(corpus)  # NotFound first
        check_judgments(catalog, corpus, questions)
        check_folds(questions)
        with self._lock:
            running = self._jobs.get(corpus)
            if running is not None and running.state in ("queued", "running"):
                raise Conflict(f"corpus {corpus!r} has a ranker training in progress ({running.id}); wait for it "
                               f"(GET /corpora/{corpus}/ranker)")
            job = TrainingJob(uuid.uuid4().hex, corpus, len(questions), force)
            self._jobs[corpus] = job
        self._pool.submit(self._run, job, list(questions))
        return job

    def _run(self, job: TrainingJob, questions: list[JudgedQuestion]) -> None:
        job.state = "running"

        def progress(done: int, _total: int) -> None:
            job.done = done

        try:
            job.report, _ = train_corpus_ranker(self.retriever, job.corpus, questions, force=job.force,
                                                progress=progress)
            job.state = "done"
        except MMRAGError as exc:
            job.state, job.error = "failed", exc.message
        except Exception as exc:  # a training must not take the server down; its reason is kept
            log.exception("ranker training of corpus %s failed", job.corpus)
            job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"

    def status(self, corpus: str) -> dict[str, Any]:
        """Which ranker the corpus's searches use, its latest training report (from its folder, so it
        outlives a restart) and this process's latest training job of it."""
        choice = self.retriever.ranker_in_use(corpus)
        folder = self.retriever.catalog.corpora.folder(corpus)
        report = _read_report(folder / REPORT_FILE)
        job = self._jobs.get(corpus)
        return {"active": choice.active, "problem": choice.problem, "report": report,
                "training": asdict(job) if job is not None else None}

    def remove(self, corpus: str) -> None:
        """Back to the default ranker: the corpus's own model and its report go."""
        self.retriever.catalog.corpora.config(corpus)
        folder = self.retriever.catalog.corpora.folder(corpus)
        if not (folder / RANKER_FILE).is_file():
            raise NotFound(f"corpus {corpus!r} has no ranker of its own (it uses the default)")
        with self._lock:
            job = self._jobs.get(corpus)
            if job is not None and job.state in ("queued", "running"):
                raise Conflict(f"corpus {corpus!r} has a ranker training in progress ({job.id}); wait for it")
            (folder / RANKER_FILE).unlink()
            (folder / REPORT_FILE).unlink(missing_ok=True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _read_report(path: Path) -> Mapping[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _mean(values: Any) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0
