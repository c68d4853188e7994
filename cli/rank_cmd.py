"""``mmrag rank``: train the learned page ranker from judged suites (a thin shell over mmrag.evaluate.rank_data)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from mmrag.errors import InvalidInput, MMRAGError

if TYPE_CHECKING:  # imported by the command: `mmrag search` does not pay for LightGBM
    from mmrag.evaluate.rank_data import QuestionScore
    from mmrag.pipeline import Pipeline

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
) -> None:
    """Train a ranker on SUITES; print leave-one-fold-out page nDCG@5 before (today's order) and after."""
    from mmrag.evaluate.rank_data import collect_questions, cross_validate, stack
    from mmrag.evaluate.suite import load_suite
    from mmrag.retrieve.ranker import train_ranker
    from mmrag.retrieve.search import RANKER_FILE

    try:
        if corpus and len(suites) != 1:
            raise InvalidInput("--corpus takes one suite (its judgments name the corpus's files)")
        questions = []
        target_dir: Path | None = None
        for spec in suites:
            path, folder = _suite_and_dir(spec, data_dir)
            suite = load_suite(path)
            pipeline = _pipeline(folder)
            try:
                questions += collect_questions(pipeline.retriever, suite, corpus=corpus)
                if corpus:
                    target_dir = pipeline.corpora.folder(corpus)
            finally:
                pipeline.close()
        if len({q.fold for q in questions}) < 2:
            raise InvalidInput(f"{len(questions)} judged questions in {len({q.fold for q in questions})} fold(s): "
                               "a ranker needs questions of two companies or documents at least")
        scores = cross_validate(questions)
        wins = _report(scores)
        model = train_ranker(*stack(questions))
        if out:
            model.save(out)
            console.print(f"model: {out}")
        if target_dir is not None:
            if wins or force:
                model.save(target_dir / RANKER_FILE)
                console.print(f"corpus {corpus!r} now ranks with its own model")
            else:
                console.print(f"corpus {corpus!r} keeps the default ranker: the trained one does not win "
                              "beyond its interval on the folds it was not trained on (--force installs it)")
    except MMRAGError as exc:
        console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(2) from exc


def _pipeline(data_dir: Path | None) -> Pipeline:
    from mmrag.config import load_settings
    from mmrag.pipeline import build_pipeline

    settings = load_settings(data_dir=data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    return build_pipeline(settings, run_jobs=False)


def _report(scores: list[QuestionScore]) -> bool:
    """Print the folds' before/after table; whether the ranker wins beyond the paired 95 % interval."""
    from mmrag.evaluate.stats import paired_bootstrap_ci

    table = Table("fold", "questions", "nDCG@5 before", "nDCG@5 after")
    for fold in sorted({s.fold for s in scores}):
        rows = [s for s in scores if s.fold == fold]
        table.add_row(fold, str(len(rows)), f"{sum(r.baseline['ndcg@5'] for r in rows) / len(rows):.3f}",
                      f"{sum(r.ranked['ndcg@5'] for r in rows) / len(rows):.3f}")
    Console().print(table)
    before = [s.baseline["ndcg@5"] for s in scores]
    after = [s.ranked["ndcg@5"] for s in scores]
    low, high = paired_bootstrap_ci([a - b for a, b in zip(after, before, strict=True)])
    delta = sum(after) / len(after) - sum(before) / len(before)
    console.print(f"leave-one-fold-out page nDCG@5: {sum(before) / len(before):.3f} -> {sum(after) / len(after):.3f} "
                  f"(paired {delta:+.3f}, 95 % {low:+.3f}..{high:+.3f}; {len(scores)} questions)")
    return low > 0
