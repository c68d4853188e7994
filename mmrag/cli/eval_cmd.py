"""``mmrag eval``: run evaluation suites and compare runs (a thin shell over mmrag.evaluate)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from mmrag.errors import MMRAGError
from mmrag.evaluate.compare import compare_runs
from mmrag.evaluate.runner import ProgressEvent, run_suite
from mmrag.evaluate.suite import Suite, load_suite

eval_app = typer.Typer(help="Evaluate retrieval and answers on a suite; compare runs.", no_args_is_help=True)
console = Console(stderr=True)


def merge_settings(settings: Any, overrides: dict[str, Any]) -> Any:
    """A copy of pydantic ``settings`` with nested ``overrides`` applied (validated again)."""
    data = settings.model_dump()

    def merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
        for key, value in extra.items():
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                merge(base[key], value)
            else:
                base[key] = value

    merge(data, overrides)
    return type(settings).model_validate(data)


class RichProgress:
    """A progress callback drawing one rich bar per stage."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage not in self.tasks:
            self.tasks[event.stage] = self.progress.add_task(event.stage, total=event.total)
        self.progress.update(self.tasks[event.stage], completed=event.done, total=event.total)


def _run(suite: Suite, out: Path, api: str | None, data_dir: Path | None, plots: bool) -> Any:
    columns = (TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        callback = RichProgress(bar)
        if api:
            from mmrag.evaluate.targets import RestTarget

            return run_suite(suite, RestTarget(api), out, progress=callback, plots=plots)
        from mmrag.config import load_settings
        from mmrag.pipeline import build_pipeline

        settings = merge_settings(load_settings(data_dir=data_dir), suite.spec.pipeline.settings)
        pipeline = build_pipeline(settings)
        try:
            answerer = find_answerer(pipeline)
            return run_suite(suite, pipeline, out, progress=callback, answerer=answerer, plots=plots)
        finally:
            pipeline.close()


def find_answerer(pipeline: Any) -> Any:
    """The pipeline's answerer: ``pipeline.answer``, else an answer service on it (``answers`` /
    ``answer_service``), else an extractive AnswerService over ``pipeline.search`` (no VLM)."""
    from mmrag.evaluate.targets import StreamingAnswerer

    if callable(getattr(pipeline, "answer", None)):
        return pipeline
    for attr in ("answers", "answer_service"):
        service = getattr(pipeline, attr, None)
        if callable(getattr(service, "answer_stream", None)):
            return StreamingAnswerer(service)
    try:
        from mmrag.generate.answer import AnswerService

        return StreamingAnswerer(AnswerService(pipeline.search, lambda corpus, page_id: b"", None))
    except (ImportError, TypeError):
        return None


def _print_metrics(metrics: dict[str, float]) -> None:
    table = Table("metric", "value")
    for key, value in metrics.items():
        table.add_row(key, f"{value:.4f}")
    Console().print(table)


@eval_app.command("run")
def run_command(
    suite: Annotated[Path, typer.Argument(help="Suite folder (holding suite.yaml) or suite file.")],
    out: Annotated[Path | None, typer.Option(help="Report folder (default eval/runs/<suite>-<time>).")] = None,
    api: Annotated[str | None, typer.Option(help="Base URL of a running mmrag API; default: in-process.")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="mmrag data folder for in-process runs.")] = None,
    variant: Annotated[str | None, typer.Option(help="Named variant of the suite (see its 'variants').")] = None,
    corpus: Annotated[Path | None, typer.Option(help="Override the suite's corpus folder.")] = None,
    spaces: Annotated[str | None, typer.Option(help="Override the spaces, comma-separated (e.g. text,bm25).")] = None,
    plots: Annotated[bool, typer.Option(help="Draw PNG plots.")] = True,
) -> None:
    """Run SUITE and write report.json, report.md, per-query JSONL and plots to --out."""
    try:
        loaded = load_suite(suite, variant=variant, corpus_dir=corpus)
        if spaces:
            loaded.spec.pipeline.spaces = [s.strip() for s in spaces.split(",") if s.strip()]
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out_dir = out or Path("eval/runs") / f"{loaded.name.replace(':', '-')}-{stamp}"
        report = _run(loaded, out_dir, api, data_dir, plots)
    except MMRAGError as exc:
        console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(2) from exc
    _print_metrics(report.metrics)
    console.print(f"report: {report.path}")


@eval_app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Baseline run folder (holding report.json).")],
    run_b: Annotated[Path, typer.Argument(help="Run folder compared against the baseline.")],
    out: Annotated[Path | None, typer.Option(help="Folder for compare.json/.md (default RUN_B/compare).")] = None,
    samples: Annotated[int, typer.Option(min=100, help="Bootstrap and permutation samples.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same numbers).")] = 0,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of the interval.")] = 0.95,
    plots: Annotated[bool, typer.Option(help="Draw the per-query scatter plot.")] = True,
) -> None:
    """Per-metric deltas of RUN_B against RUN_A with paired bootstrap CIs and permutation p-values."""
    out_dir = out or Path(run_b) / "compare"
    try:
        result = compare_runs(run_a, run_b, out_dir, samples=samples, confidence=confidence, seed=seed, plots=plots)
    except MMRAGError as exc:
        console.print(f"[red]error:[/red] {exc.message}")
        raise typer.Exit(2) from exc
    table = Table("metric", "A", "B", "delta", "CI", "p")
    for metric, r in result["metrics"].items():
        ci = f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        table.add_row(
            metric,
            f"{r['mean_a']:.4f}",
            f"{r['mean_b']:.4f}",
            f"{r['delta']:+.4f}",
            ci,
            f"{r['p_value']:.4f}",
        )
    Console().print(table)
    console.print(f"comparison: {out_dir / 'compare.json'}")


if __name__ == "__main__":
    eval_app()
