"""Pipeline efficiency: end-to-end pages/s of the job pipeline over a real multi-document corpus,
divided by the pages/s of its slowest stage run alone.

The corpus is the docling PDFs (``/work/shared/corpus/docling/pdf``), repeated ``--copies`` times
(1 with ``--quick``) with a unique trailing PDF comment per copy (same pages, different content
hashes). The embedder is the real MiniLM (``st:sentence-transformers/all-MiniLM-L6-v2``), the store
the embedded Qdrant engine.

*Stages alone*: the same stage code (plan, parse, embed, write through the spool) over every batch,
one stage at a time in one thread; each stage's pages/s = pages / its wall time.
*Pipeline*: the embedded runner (``cpu_workers`` parse threads, ``embed_workers`` embed threads, one
writer) on a fresh data folder, from submit to the job's end.

    python -m bench.pipeline --quick

ends with ``RESULT pipeline_ratio=<pipeline pages/s / slowest stage pages/s>`` (1.0: the stages
overlap perfectly and the pipeline runs at its bottleneck's speed).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from mmrag.config import Settings
from mmrag.embed.base import Embedder, load_embedder
from mmrag.jobs.model import Work
from mmrag.jobs.runner import local_runner
from mmrag.jobs.stages import run_stage
from mmrag.jobs.writer import Upload
from mmrag.pipeline import Pipeline, build_pipeline

CORPUS = Path(os.environ.get("MMRAG_TEST_CORPUS", "/work/shared/corpus/docling")) / "pdf"
MODEL = "st:sentence-transformers/all-MiniLM-L6-v2"


def corpus(copies: int) -> list[Upload]:
    pdfs = sorted(CORPUS.glob("*.pdf"))
    return [Upload(f"{i}-{p.name}", p.read_bytes() + f"\n% bench copy {i}\n".encode(), {})
            for i in range(copies) for p in pdfs]


def fresh(root: Path, name: str, embedder: Embedder, args: argparse.Namespace) -> Pipeline:
    settings = Settings(data_dir=root / name)
    settings.embed.text_model, settings.embed.clip_model, settings.embed.colpali_model = MODEL, None, None
    settings.jobs.batch_pages = args.batch_pages
    settings.jobs.cpu_workers, settings.jobs.embed_workers = args.cpu_workers, args.embed_workers
    p = build_pipeline(settings, embedders={"text": embedder})
    p.create_corpus("bench")
    return p


def stages_alone(p: Pipeline, uploads: list[Upload]) -> tuple[int, dict[str, float]]:
    """(pages, stage -> seconds), running each stage over every batch before the next stage."""
    assert p.job_writer is not None and p.jobs is not None
    ctx = p.stage_context()
    job_id, work = p.job_writer.submit("bench", uploads)
    seconds: dict[str, float] = {}
    for stage in ("plan", "parse", "embed", "write"):
        t0 = time.perf_counter()
        following: list[Work] = []
        for w in work:
            following.extend(p.job_writer.handle(w) if stage == "write" else run_stage(ctx, w))
        seconds[stage] = time.perf_counter() - t0
        commits = [w for w in following if w.stage == "commit"]
        for c in commits:
            p.job_writer.handle(c)
        work = [w for w in following if w.stage != "commit"]
    job = p.jobs.status(job_id)
    assert job.state.value == "done" and job.pages_done == job.pages_total, job
    return job.pages_total, seconds


def pipelined(p: Pipeline, uploads: list[Upload]) -> tuple[int, float]:
    assert p.jobs is not None
    runner = local_runner(p)
    runner.start()
    try:
        t0 = time.perf_counter()
        job_id = runner.submit("bench", uploads)
        while not (job := p.jobs.status(job_id)).finished:
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
    finally:
        runner.stop()
    assert job.state.value == "done" and job.pages_done == job.pages_total, job
    return job.pages_total, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one copy of the corpus (44 pages)")
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--batch-pages", type=int, default=4)
    ap.add_argument("--cpu-workers", type=int, default=1)
    ap.add_argument("--embed-workers", type=int, default=1)
    args = ap.parse_args()
    copies = 1 if args.quick else args.copies
    embedder = load_embedder(MODEL)
    embedder.embed_many(["warm up the model"] * 8)
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-") as tmp:
        root = Path(tmp)
        alone = fresh(root, "alone", embedder, args)
        try:
            pages, seconds = stages_alone(alone, corpus(copies))
        finally:
            alone.close()
        piped = fresh(root, "pipeline", embedder, args)
        try:
            pages2, elapsed = pipelined(piped, corpus(copies))
        finally:
            piped.close()
    assert pages == pages2
    print(f"corpus: {copies} x {len(list(CORPUS.glob('*.pdf')))} docling PDFs = {pages} pages; batch "
          f"{args.batch_pages} pages; {args.cpu_workers} parse + {args.embed_workers} embed threads; "
          f"{os.cpu_count()} cores; load average at the end {os.getloadavg()[0]:.1f}")
    print(f"{'stage':<10}{'seconds':>10}{'pages/s':>10}")
    for stage, s in seconds.items():
        print(f"{stage:<10}{s:>10.2f}{pages / s:>10.1f}")
    slowest = max(seconds, key=lambda k: seconds[k])
    print(f"{'pipeline':<10}{elapsed:>10.2f}{pages / elapsed:>10.1f}   (slowest stage alone: {slowest})")
    print(f"serial sum of stages: {sum(seconds.values()):.2f}s")
    print(f"RESULT pipeline_ratio={(pages / elapsed) / (pages / seconds[slowest]):.3f}")


if __name__ == "__main__":
    main()
