"""A corpus's own page ranker: train it from judged questions, see which ranker serves, go back to the
default (:mod:`mmrag.evaluate.ranker_training`)."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, status

from api.deps import RankersDep, ReadDep, WriteDep
from api.errors import responses
from api.ranker_schemas import RankerOut, RankerTrainIn, TrainingJobOut
from mmrag.evaluate.rank_data import JudgedQuestion

router = APIRouter(prefix="/corpora/{corpus}/ranker", tags=["ranker"])


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=TrainingJobOut,
             responses=responses(400, 404, 409, 413, 422))
def train_ranker(corpus: str, body: RankerTrainIn, rankers: RankersDep, _: WriteDep) -> TrainingJobOut:
    """Train the corpus's own ranker from your judged questions (in the background; one training per
    corpus at a time, 409 while one runs). Each group of questions is scored by a ranker trained on the
    other groups; the model trained on all of them serves the corpus only when it beats the default
    beyond the paired 95 % interval there (or with ``force``). 409 when a judgment names no page of the
    corpus (or a training of it runs), 400 when the questions form fewer than two groups or grade no page
    above 0; 413 past MMRAG_API__MAX_JSON_BYTES."""
    questions = [JudgedQuestion(q.id, q.query, dict(q.judgments), q.group) for q in body.questions]
    return TrainingJobOut.model_validate(asdict(rankers.start(corpus, questions, body.force)))


@router.get("", response_model=RankerOut, responses=responses(404, 503))
def get_ranker(corpus: str, rankers: RankersDep, _: ReadDep) -> RankerOut:
    """Which ranker the corpus's searches use, the latest training's fold table and this server's latest
    training job."""
    return RankerOut.model_validate(rankers.status(corpus))


@router.delete("", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404, 409))
def delete_ranker(corpus: str, rankers: RankersDep, _: WriteDep) -> None:
    """Back to the default ranker (404 when the corpus has no ranker of its own)."""
    rankers.remove(corpus)
