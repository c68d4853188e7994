"""Fair ingestion across corpora (issue 28): a one-page upload's time to done while another corpus
ingests the nested-XObject bomb, over the same upload alone.

One in-process pipeline (MiniLM text embedder, the embedded runner with its defaults: one parse thread
per corpus plus the spare), corpora ``bomb`` and ``small``. Arms, ABBA-alternated over ``--rounds``:

- ``alone``: a one-page text PDF (unique bytes each time) uploaded to ``small``, submit to the job's end;
- ``beside``: the bomb (``tests.jobs.hostile_pdfs.nested_xobjects(12)``, 3.7 KB, 4**12 draws: minutes of
  drawing) uploaded to ``bomb``, then, ``--gap`` seconds later, the same kind of upload to ``small``,
  timed the same way; then the bomb's job is cancelled (its parse worker killed) before the next arm.

The up-front drawing check is off here (``max_page_draws``/``max_page_content_bytes`` huge) so the bomb
holds its parse thread for its whole clock (``--budget`` seconds; the default setting is 60), the worst
case the clocks allow. Per round: ``beside / alone``. Each arm ends with ``--settle`` seconds of quiet, as in
``bench.fairness_celery``: without it an ``alone`` right after a ``beside`` waited for the cancelled bomb's
parse worker to be replaced (0.8-1.1 s against 0.06-0.11 s, quiet box), which made the interval wide.

    python -m bench.fairness [--rounds 5] [--budget 30] [--gap 0.5] [--settle 5]

ends with ``RESULT fairness_ratio=.. fairness_ratio_lo=.. fairness_ratio_hi=.. alone_s=.. beside_s=..``
(target: ``fairness_ratio_hi <= 2``) and the load.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench._stats import alternate, machine_line, paired_result


def one_page(tag: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), f"Quarterly revenue note {tag}: sales rose in every region.")
    return bytes(doc.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=30.0, help="parse_timeout_s and page_timeout_s of the run")
    ap.add_argument("--gap", type=float, default=0.5, help="seconds between the bomb's upload and the small one")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds of quiet after each arm (a cancelled bomb's parse worker is replaced meanwhile)")
    args = ap.parse_args()

    from mmrag.config import Settings
    from mmrag.embed.base import load_embedder
    from mmrag.jobs.wait import wait_job
    from mmrag.jobs.writer import Upload
    from mmrag.pipeline import build_pipeline
    from tests.jobs.hostile_pdfs import nested_xobjects

    print(machine_line(), flush=True)
    minilm = load_embedder("st:sentence-transformers/all-MiniLM-L6-v2")
    minilm.embed_many(["warm up the model"] * 4)
    bomb = nested_xobjects(12)
    with tempfile.TemporaryDirectory(prefix="mmrag-bench-fair-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        settings.embed.clip_model = settings.embed.colpali_model = None
        settings.vlm.backend = "none"
        settings.ingest = settings.ingest.model_copy(update={
            "parse_timeout_s": args.budget, "page_timeout_s": args.budget,
            "max_page_draws": 10**12, "max_page_content_bytes": 10**15})
        pipeline = build_pipeline(settings, embedders={"text": minilm})
        counter = iter(range(10**6))
        try:
            for name in ("bomb", "small"):
                pipeline.corpora.create_corpus(name)

            def small_upload() -> float:
                t0 = time.perf_counter()
                job = pipeline.ingest.uploads("small", [Upload("note.pdf", one_page(str(next(counter))), {})])
                assert job.state.value == "done", job.summary()
                return time.perf_counter() - t0

            def beside(_: int) -> float:
                bomb_job = pipeline.runner.submit("bomb", [Upload(f"bomb{next(counter)}.pdf", bomb + b"%" + str(
                    next(counter)).encode(), {})])
                time.sleep(args.gap)
                seconds = small_upload()
                still = not pipeline.jobs.status(bomb_job).finished
                pipeline.runner.cancel(bomb_job)
                wait_job(pipeline.jobs, bomb_job)
                print(f"  beside: {seconds:.2f}s (bomb still parsing: {still}) load {_load():.1f}", flush=True)
                time.sleep(args.settle)
                return seconds

            def alone(_: int) -> float:
                seconds = small_upload()
                print(f"  alone: {seconds:.2f}s load {_load():.1f}", flush=True)
                time.sleep(args.settle)
                return seconds

            small_upload()  # the parse worker and the corpus warm
            times = alternate({"alone": alone, "beside": beside}, args.rounds)
        finally:
            pipeline.close()
    paired_result("fairness_ratio", "beside the bomb / alone", times, "beside", "alone", 2.0, at_least=False,
                  extra={"budget_s": args.budget})


def _load() -> float:
    import os

    return os.getloadavg()[0]


if __name__ == "__main__":
    main()
