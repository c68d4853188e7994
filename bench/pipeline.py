"""Pipeline efficiency: end-to-end pages/s of the ingestion path (the job pipeline every ingest goes
through) over a real multi-document corpus, divided by the pages/s of its slowest stage run alone.

The corpus is the docling PDFs (``/work/shared/corpus/docling/pdf``; ``--docs`` of them, 4 with
``--quick``), repeated ``--copies`` times with a unique trailing PDF comment per copy (same pages,
different content hashes). Embedders: the real MiniLM text model (``--spaces text``), plus the tiny
random ColQwen2 and open_clip of ``tests/fixtures`` for the visual spaces (``--spaces visual``). The
store is the embedded Qdrant engine.

*Stages alone*: the same stage code (plan, parse, embed, write through the spool) over every batch,
one stage at a time on one worker thread (as the runner's stages run); each stage's pages/s = pages / its wall time.
*Pipeline*: ``Pipeline.ingest.uploads`` with the embedded runner (``cpu_workers`` parse threads,
``embed_workers`` embed threads, one writer) on a fresh data folder, from submit to the job's end.

Each round runs both arms on fresh data folders, the order ABBA-alternated over ``--rounds`` rounds;
the round's ratio = pipeline pages/s / (slowest stage alone pages/s) of that round.

    python -m bench.pipeline --quick

ends with ``RESULT pipeline_ratio=<median> _lo _hi`` for each space set (``pipeline_ratio`` is the
text-only run, ``pipeline_ratio_visual`` the one with the visual spaces on); 1.0: the stages
overlap perfectly and the pipeline runs at its bottleneck's speed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench._stats import machine_line, result_line, verdict
from mmrag.config import Settings
from mmrag.embed.base import Embedder, load_embedder
from mmrag.evaluate.stats import Estimate, interval
from mmrag.jobs.model import Work
from mmrag.jobs.stages import run_stage
from mmrag.jobs.writer import Upload
from mmrag.pipeline import Pipeline, build_pipeline

CORPUS = Path(os.environ.get("MMRAG_TEST_CORPUS", "/work/shared/corpus/docling")) / "pdf"
MODEL = "st:sentence-transformers/all-MiniLM-L6-v2"
MAX_AHEAD = 1000  # JobsConfig.parse_ahead's bound


def corpus(copies: int, docs: int | None, tag: str) -> list[Upload]:
    pdfs = sorted(CORPUS.glob("*.pdf"))[:docs]
    return [Upload(f"{i}-{p.name}", p.read_bytes() + f"\n% bench copy {tag} {i}\n".encode(), {})
            for i in range(copies) for p in pdfs]


def embedders_for(spaces: str, folder: Path, device: str) -> dict[str, Embedder]:
    from mmrag.embed.base import EmbedderOptions

    out = {"text": load_embedder(MODEL, EmbedderOptions(device=device))}
    if spaces == "visual":
        from tests.fixtures.tiny_models import build_tiny_colqwen2, build_tiny_open_clip

        clip = build_tiny_open_clip(folder / "clip") / "local"
        out["clip"] = load_embedder(f"open_clip:local-dir:{clip}", EmbedderOptions(device=device))
        out["colpali"] = load_embedder(f"colpali:{build_tiny_colqwen2(folder / 'colqwen2')}",
                                       EmbedderOptions(device=device))
    for e in out.values():  # warm up
        e.embed_many(["warm up the model"] * 4)
    return out


def fresh(root: Path, name: str, embedders: dict[str, Embedder], args: argparse.Namespace,
          run_jobs: bool) -> Pipeline:
    settings = Settings(data_dir=root / name)
    settings.embed.text_model, settings.embed.clip_model, settings.embed.colpali_model = MODEL, None, None
    settings.jobs.batch_pages = args.batch_pages
    settings.jobs.cpu_workers, settings.jobs.embed_workers = args.cpu_workers, args.embed_workers
    if not run_jobs:  # stages alone: plan releases every parse at once (no window between stages)
        settings.jobs.parse_ahead = MAX_AHEAD
    p = build_pipeline(settings, embedders=embedders, run_jobs=run_jobs)
    p.corpora.create_corpus("bench")  # every space the embedders give (text + bm25, and clip + colpali)
    return p


def stages_alone(p: Pipeline, uploads: list[Upload]) -> tuple[int, dict[str, float]]:
    """(pages, stage -> seconds), running each stage over every batch before the next stage."""
    ctx = p.stage_context()
    job_id, work = p.job_writer.submit("bench", uploads)
    seconds: dict[str, float] = {}
    order = ("plan", "parse", "embed", "write")
    for i, stage in enumerate(order):
        t0 = time.perf_counter()
        following: list[Work] = []
        for w in work:
            following.extend(p.job_writer.handle(w) if stage == "write" else run_stage(ctx, w))
        seconds[stage] = time.perf_counter() - t0
        for c in (w for w in following if w.stage == "commit"):
            p.job_writer.handle(c)
        # the next stage's work; the parses an embed releases (the window) lie past the files' last
        # batches here: this arm's plan released every batch at once (parse_ahead = MAX)
        work = [w for w in following if i + 1 < len(order) and w.stage == order[i + 1]]
    job = p.jobs.status(job_id)
    assert job.state.value == "done" and job.pages_done == job.pages_total, job
    return job.pages_total, seconds


def pipelined(p: Pipeline, uploads: list[Upload]) -> tuple[int, float]:
    t0 = time.perf_counter()
    job = p.ingest.uploads("bench", uploads)
    elapsed = time.perf_counter() - t0
    assert job.state.value == "done" and job.pages_done == job.pages_total, job
    return job.pages_total, elapsed


def one_round(root: Path, r: int, embedders: dict[str, Embedder], args: argparse.Namespace) -> float:
    """Both arms on fresh folders (order alternating by round); pipeline rate / slowest-stage rate."""
    alone: tuple[int, dict[str, float]] = (0, {})
    piped: tuple[int, float] = (0, 0.0)
    for arm in ("alone", "pipeline") if r % 2 == 0 else ("pipeline", "alone"):
        p = fresh(root, f"{arm}-{r}", embedders, args, run_jobs=arm == "pipeline")
        try:
            uploads = corpus(args.copies, args.docs, f"{arm}{r}")
            if arm == "alone":  # on a worker thread, as the runner's stages run (torch threads alike)
                with ThreadPoolExecutor(1) as worker:
                    alone = worker.submit(stages_alone, p, uploads).result()
            else:
                piped = pipelined(p, uploads)
        finally:
            p.close()
    (pages, seconds), (pages2, elapsed) = alone, piped
    assert pages == pages2
    slowest = max(seconds, key=lambda k: seconds[k])
    ratio = (pages / elapsed) / (pages / seconds[slowest])
    stages = " ".join(f"{k} {v:.2f}s" for k, v in seconds.items())
    print(f"round {r + 1}: {pages} pages | alone: {stages} (slowest {slowest}) | pipeline {elapsed:.2f}s | "
          f"ratio {ratio:.3f} | load {os.getloadavg()[0]:.1f}", flush=True)
    return ratio


def measure(spaces: str, args: argparse.Namespace) -> Estimate:
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-") as tmp:
        root = Path(tmp)
        embedders = embedders_for(spaces, root / "models", args.device)
        print(f"spaces: {', '.join(sorted(embedders))}; {args.copies} x {args.docs or 'all'} docling PDFs; batch "
              f"{args.batch_pages} pages; {args.cpu_workers} parse + {args.embed_workers} embed threads", flush=True)
        ratios = [one_round(root, r, embedders, args) for r in range(args.rounds)]
    return interval(ratios)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="4 PDFs (14 pages), 5 rounds per space set")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--docs", type=int, default=None, help="first N docling PDFs (default: all 13)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--spaces", default="text,visual", help="comma-separated: text, visual")
    ap.add_argument("--batch-pages", type=int, default=4)
    ap.add_argument("--cpu-workers", type=int, default=1)
    ap.add_argument("--embed-workers", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    if args.quick and args.docs is None:
        args.docs = 4
    print(machine_line(), flush=True)
    values: dict[str, Estimate] = {}
    for spaces in args.spaces.split(","):
        est = measure(spaces, args)
        values["pipeline_ratio" if spaces == "text" else f"pipeline_ratio_{spaces}"] = est
        print(verdict(f"pipeline_ratio ({spaces})", est, 0.8, at_least=True), flush=True)
    print(machine_line())
    print(result_line(values))


if __name__ == "__main__":
    main()
