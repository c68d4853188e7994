"""The learned page ranker: a LightGBM lambdarank model over :data:`mmrag.retrieve.rank_features.FEATURES`
(or another of its ``FEATURE_SETS``).

Lifecycle: trained by ``mmrag rank train`` from suites with page judgments (:func:`train_ranker`), saved
as LightGBM's own text model (a small file; the feature names are in it, a search computes those, and a
file naming one this version does not compute is refused), loaded once per process (:func:`load_ranker`, cached by
path and modification time) and applied to the candidates of a search (:meth:`PageRanker.score`).
``explain`` shows each feature's contribution (LightGBM's SHAP values) to a page's score.
The shipped model is ``mmrag/retrieve/models/page_ranker.txt`` (how it is rebuilt: docs/retrieval.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InvalidInput
from mmrag.retrieve.rank_features import FEATURES, feature_columns

SHIPPED = Path(__file__).parent / "models" / "page_ranker.txt"
PARAMS: dict[str, Any] = {
    "objective": "lambdarank", "metric": "ndcg", "eval_at": [5], "learning_rate": 0.05, "num_leaves": 7,
    "min_data_in_leaf": 50, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
    "lambdarank_truncation_level": 20, "verbose": -1, "seed": 7, "deterministic": True, "num_threads": 1,
}
"""Training parameters: small trees, few rounds (about a hundred judged questions; chosen on the
leave-one-company-out folds of the filings suite, docs/benchmarks.md; re-checked against leaves of 5-20 rows and
15 leaves on the development folds, issue 40: docs/evaluation.md, "mmlongbench-dev, one model of several kinds")."""
ROUNDS = 300


@dataclass(frozen=True, slots=True)
class PageRanker:
    """A trained model; ``score`` and ``contributions`` take :func:`feature_matrix` rows."""

    booster: Any  # lightgbm.Booster
    source: str  # where it was loaded from (a path, or "trained")

    @property
    def features(self) -> tuple[str, ...]:
        """The columns its rows hold (:func:`mmrag.retrieve.rank_features.feature_matrix`'s ``names``)."""
        return tuple(self.booster.feature_name())

    def score(self, rows: np.ndarray) -> np.ndarray:
        """(n,) scores, higher is better; comparable within one query only."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(self.booster.predict(rows, num_threads=1), dtype=np.float64)

    def contributions(self, rows: np.ndarray) -> np.ndarray:
        """(n, len(features) + 1): each feature's share of each row's score, then the bias."""
        return np.asarray(self.booster.predict(rows, pred_contrib=True, num_threads=1), dtype=np.float64)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(path))


def train_ranker(rows: np.ndarray, labels: np.ndarray, groups: Sequence[int], rounds: int = ROUNDS,
                 params: dict[str, Any] | None = None, features: Sequence[str] = FEATURES) -> PageRanker:
    """A lambdarank model of ``rows`` (feature_matrix rows of consecutive queries, columns ``features``),
    ``labels`` (graded relevance, 0 for unjudged pages) and ``groups`` (rows per query, in order)."""
    import lightgbm

    if sum(groups) != len(rows) or len(labels) != len(rows):
        raise InvalidInput(f"{len(rows)} rows, {len(labels)} labels and groups summing to {sum(groups)} differ")
    if rows.ndim != 2 or rows.shape[1] != len(features):
        raise InvalidInput(f"rows of {rows.shape[1:]} columns for {len(features)} features")
    data = lightgbm.Dataset(rows, label=labels, group=list(groups), feature_name=list(features),
                            free_raw_data=False)
    booster = lightgbm.train({**PARAMS, **(params or {})}, data, num_boost_round=rounds)
    return PageRanker(booster, "trained")


_CACHE: dict[tuple[str, int], PageRanker] = {}
_LOCK = threading.Lock()


def load_ranker(path: Path = SHIPPED) -> PageRanker:
    """The model in ``path`` (cached until the file changes); InvalidInput when it is missing, not a
    LightGBM model, or was trained on a feature this version does not compute."""
    import lightgbm

    try:
        key = (str(path.resolve()), path.stat().st_mtime_ns)
    except OSError as exc:
        raise InvalidInput(f"ranker model {path.name}: cannot be read ({exc.strerror})") from exc
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        try:
            booster = lightgbm.Booster(model_file=str(path))
        except lightgbm.basic.LightGBMError as exc:
            raise InvalidInput(f"ranker model {path.name}: not a LightGBM model") from exc
        try:
            feature_columns(booster.feature_name())
        except InvalidInput as exc:
            raise InvalidInput(f"ranker model {path.name}: trained on features {booster.feature_name()}: "
                               f"{exc.message}; retrain it (mmrag rank train)") from exc
        ranker = PageRanker(booster, str(path))
        _CACHE[key] = ranker
        return ranker
