"""Bodies of a corpus's own page ranker (``/corpora/{corpus}/ranker``): judged questions in, the
leave-one-fold-out report and the ranker in use out."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

PageKey = Annotated[str, Field(min_length=3, max_length=300, pattern=r"^[^/\\]+#[1-9][0-9]{0,5}$",
                               description="'file name#page': the document's file name as uploaded, pages from 1")]
MAX_QUESTIONS = 2000


class JudgedQuestionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1, max_length=200, description="Your id of the question")
    query: str = Field(..., min_length=1, max_length=2000, description="The question, as a user would search it")
    judgments: dict[PageKey, Annotated[int, Field(ge=0, le=3)]] = Field(
        ..., min_length=1, max_length=100, json_schema_extra={"additionalProperties": False},  # keys: the pattern
        description="Pages that answer it, with a grade 1..3 (0: judged not relevant)")
    group: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$",
                              description="Its fold (e.g. the company it asks about); default: the file name of "
                                          "its best-judged page. The ranker is scored on each group by a model "
                                          "trained on the others.")


class RankerTrainIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[JudgedQuestionIn] = Field(..., min_length=2, max_length=MAX_QUESTIONS)
    force: bool = Field(False, description="Install the trained model even where it does not win beyond its "
                                           "interval on the groups it was not trained on")


class FoldOut(BaseModel):
    fold: str
    questions: int
    before: float = Field(..., description="Page nDCG@5 of the default order")
    after: float = Field(..., description="Page nDCG@5 by a ranker trained without this fold")


class TrainingReportOut(BaseModel):
    questions: int
    folds: list[FoldOut]
    before: float
    after: float
    delta_low: float = Field(..., description="Paired 95 % bootstrap interval of after − before")
    delta_high: float
    candidate_recall: float = Field(..., description="Share of questions with a judged page among the candidates")
    wins: bool = Field(..., description="delta_low > 0")
    installed: bool = Field(..., description="The corpus ranks with this model now")
    forced: bool
    trained_at: float


class TrainingJobOut(BaseModel):
    id: str
    corpus: str
    questions: int
    force: bool
    state: str = Field(..., description="queued | running | done | failed")
    done: int = Field(..., description="Questions searched so far")
    error: str | None
    report: TrainingReportOut | None
    created_at: float


class RankerOut(BaseModel):
    active: str = Field(..., description="own (trained on this corpus's judgments) | shipped | configured | off")
    problem: str | None = Field(..., description="Why an own model in the corpus's folder is passed over")
    report: TrainingReportOut | None = Field(..., description="The latest training's report (kept with the corpus)")
    training: TrainingJobOut | None = Field(..., description="This server's latest training of the corpus")
