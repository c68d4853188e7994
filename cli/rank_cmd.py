"""``mmrag rank``: train the learned page ranker from judged suites (a thin shell over mmrag.evaluate.rank_data)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mmrag.errors import InvalidInput, MMRAGError

if TYPE_CHECKING:  # imported by the command: `mmrag search` does not pay for LightGBM
    from mmrag.evaluate.ranker_training import TrainingReport
    from mmrag.pipeline import Pipeline
    from mmrag.retrieve.ranker import PageRanker

rank_app = typer.Typer(help="Train the learned page ranker from suites with page judgments.", no_args_is_help=True)
console = Console(stderr=True)


def _suite_and_dir(text: str, default: Path | None) -> tuple[str, Path | None]:
    suite, sep, data = text.partition("@")
    return suite, Path(data) if sep else default


@rank_app.command("train")
def train_command(
    suites: Annotated[list[str], typer.Argument(help="Suites with page judgments, each SUITE or SUITE@DATA_DIR "
                                                     "(its corpus ingested there by `mmrag eval run`).")],
    out: Annotated[Path | None, typer.Option(help="Write the model here (LightGBM text).")] = None,
    data_dir: Annotated[Path | None, typer.Option(envvar="MMRAG_DATA_DIR", help="Data folder of the suites.")] = None,
    corpus: Annotated[str | None, typer.Option(help="Train on the one suite's judgments over this corpus of "
                                                    "yours and make the model that corpus's own ranker when it "
                                                    "wins on the folds it was not trained on.")] = None,
    force: Annotated[bool, typer.Option(help="With --corpus: install the model even where it does not win.")] = False,
    features: Annotated[str, typer.Option(help="Feature set the model reads: base (the shipped model's), "
                                               "references (also the page, slide, figure and table numbers a "
                                               "question names) or context (also how much of the question the "
                                               "whole page holds and what its neighbouring pages score; "
                                               "docs/retrieval.md).")] = "base",
) -> None:
    """Train a ranker on SUITES; print leave-one-fold-out page nDCG@5 before (today's order) and after."""
    from mmrag.evaluate.rank_data import collect_suite, cross_validate, stack, suite_questions
    from mmrag.evaluate.ranker_training import check_folds, feature_set, summarise, train_corpus_ranker
    from mmrag.evaluate.suite import load_suite
    from mmrag.retrieve.ranker import train_ranker

    try:
        names = feature_set(features)
        if corpus:
            if len(suites) != 1:
                raise InvalidInput("--corpus takes one suite (its judgments name the corpus's files)")
            path, folder = _suite_and_dir(suites[0], data_dir)
            pipeline = _pipeline(folder)
            try:
                report, model = train_corpus_ranker(pipeline.retriever, corpus, suite_questions(load_suite(path)),
                                                    force=force, features=names)
            finally:
                pipeline.close()
            _print(report)
            _save(model, out)
            console.print(f"corpus {corpus!r} now ranks with its own model" if report.installed else
                          f"corpus {corpus!r} keeps the default ranker: the trained one does not win beyond its "
                          "interval on the folds it was not trained on (--force installs it)")
            return
        questions = []
        for spec in suites:
            path, folder = _suite_and_dir(spec, data_dir)
            pipeline = _pipeline(folder)
            try:
                questions += collect_suite(pipeline.retriever, load_suite(path))
            finally:
                pipeline.close()
        check_folds(questions)
        _print(summarise(cross_validate(questions, features=names)))
        _save(train_ranker(*stack(questions, names), features=names), out)
    except MMRAGError as exc:
        console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(2) from exc


def _pipeline(data_dir: Path | None) -> Pipeline:
    from mmrag.config import load_settings
    from mmrag.pipeline import build_pipeline

    settings = load_settings(data_dir=data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    return build_pipeline(settings, run_jobs=False)


def _save(model: PageRanker, out: Path | None) -> None:
    if out:
        model.save(out)
        console.print(f"model: {out}")


def _print(report: TrainingReport) -> None:
    """The folds' before/after table and the paired interval."""
    table = Table("fold", "questions", "nDCG@5 before", "nDCG@5 after")
    for f in report.folds:
        table.add_row(f.fold, str(f.questions), f"{f.before:.3f}", f"{f.after:.3f}")
    Console().print(table)
    console.print(f"leave-one-fold-out page nDCG@5: {report.before:.3f} -> {report.after:.3f} (paired "
                  f"{report.after - report.before:+.3f}, 95 % {report.delta_low:+.3f}..{report.delta_high:+.3f}; "
                  f"{report.questions} questions; a judged page among the candidates: {report.candidate_recall:.0%})")
