"""``mmrag eval``: run evaluation suites and compare runs (a thin shell over mmrag.evaluate)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from mmrag.config import load_settings, merge_settings
from mmrag.errors import MMRAGError

if TYPE_CHECKING:  # mmrag.evaluate is imported by the commands: `mmrag search` does not pay for it
    from mmrag.evaluate.runner import ProgressEvent
    from mmrag.evaluate.suite import Suite

eval_app = typer.Typer(help="Evaluate retrieval and answers on a suite; compare runs.", no_args_is_help=True)
console = Console(stderr=True)


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
    """In-process: the pipeline built from the settings with the suite's overrides, ingesting through
    its jobs and answering with its answer service (the VLM when one loads, else extractive);
    with ``api``: the same suite through the application over that server's REST API."""
    from mmrag.evaluate.runner import run_suite

    columns = (TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        callback = RichProgress(bar)
        if api:
            from mmrag.remote_application import RemoteApplication
            from mmrag.rest_client import Client

            target = RemoteApplication(Client(api, timeout_s=300.0), job_timeout_s=300.0)
            try:
                return run_suite(suite, target, out, progress=callback, plots=plots)
            finally:
                target.close()
        from mmrag.pipeline import build_pipeline

        settings = merge_settings(load_settings(data_dir=data_dir), suite.spec.pipeline.settings)
        from mmrag.local_application import LocalApplication

        application = LocalApplication(build_pipeline(settings))
        try:
            return run_suite(suite, application, out, progress=callback, plots=plots)
        finally:
            application.close()


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
    split: Annotated[str | None, typer.Option(help="Run one split of the suite's queries (e.g. tune, test).")] = None,
    spaces: Annotated[str | None, typer.Option(help="Override the spaces, comma-separated (e.g. text,bm25).")] = None,
    plots: Annotated[bool, typer.Option(help="Draw PNG plots.")] = True,
) -> None:
    """Run SUITE and write report.json, report.md, per-query JSONL and plots to --out."""
    from mmrag.evaluate.suite import load_suite

    try:
        loaded = load_suite(suite, variant=variant, corpus_dir=corpus, split=split)
        if spaces:
            loaded.spec.pipeline.spaces = [s.strip() for s in spaces.split(",") if s.strip()]
        stamp = time.strftime("%Y%m%d-%H%M%S")
        half = f"-{loaded.spec.dataset.split}" if loaded.spec.dataset.split else ""
        out_dir = out or Path("eval/runs") / f"{loaded.name.replace(':', '-')}{half}-{stamp}"
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
    from mmrag.evaluate.compare import compare_runs

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
