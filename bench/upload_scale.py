"""A one-file upload to searchable, in a small and a large corpus (issue 41's ``upload_ratio``, on its own).

``bench.scale`` measures the upload three times per size among everything else; this runs only that, over
more rounds, with both folders open at once and their order alternated (ABBA): each round uploads the same
real 4-page PDF (``--upload``) into each folder's corpus through the ingestion job (``Pipeline.ingest``, which
waits for the job: BM25's drift check and the store's optimise included), searches its first words until
it is found (the first search after the job: what the upload's user waits for), then deletes it again
(not timed). Both pipelines are warmed as the server warms at start-up, and searched once before the first
round, so the rounds time what every later upload costs, not the first search of a process.

The folders are two sizes ``bench.scale`` grew from one base (``--keep --grow-only``)::

    python -m bench.scale --keep --grow-only --data-dir SMALL --sizes 5000
    python -m bench.scale --keep --grow-only --data-dir LARGE --sizes 50000
    python -m bench.upload_scale --small SMALL --large LARGE --rounds 9

It ends with ``RESULT upload_ratio small_s large_s pages_small pages_large`` (``upload_ratio``: large /
small per round, paired; medians over rounds with 95 % bootstrap intervals; issue 41's target at 250,000
pages against 5,000 is 1.5).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench._scale_corpus import corpus_pages
from bench._scale_measure import upload_and_delete
from bench._stats import machine_line, result_line, verdict
from bench.scale import UPLOAD, search_settings
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.pipeline import Pipeline, build_pipeline
from mmrag.types import SearchRequest

TARGET = 1.5


def opened(folder: Path, corpus: str) -> Pipeline:
    pipeline = build_pipeline(search_settings(folder))
    pipeline.warm_up()
    pipeline.search(corpus, SearchRequest(query="revenue in the quarter", top_k=10))
    return pipeline


def run(small: Path, large: Path, corpus: str, upload: Path, rounds: int) -> dict[str, object]:
    pipelines = {"small": opened(small, corpus), "large": opened(large, corpus)}
    try:
        pages = {name: corpus_pages(p, corpus) for name, p in pipelines.items()}
        print(f"{pages['small']:,} and {pages['large']:,} pages; {machine_line()}", flush=True)
        times: dict[str, list[float]] = {"small": [], "large": []}
        for r in range(rounds):
            for name in ("small", "large") if r % 2 == 0 else ("large", "small"):  # ABBA
                up, _ = upload_and_delete(pipelines[name], corpus, upload, 1)
                times[name] += up
            print(f"round {r + 1}/{rounds}: small {times['small'][-1]:.3f} s | large {times['large'][-1]:.3f} s",
                  flush=True)
    finally:
        for p in pipelines.values():
            p.close()
    return {"upload_ratio": interval(paired_ratios(times["large"], times["small"])),
            "small_s": interval(times["small"]), "large_s": interval(times["large"]),
            "pages_small": pages["small"], "pages_large": pages["large"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=Path, required=True, help="data folder of the small corpus")
    ap.add_argument("--large", type=Path, required=True, help="data folder of the large corpus (same base)")
    ap.add_argument("--corpus", default="sec10q", help="the corpus in both folders")
    ap.add_argument("--upload", type=Path, default=UPLOAD, help="the PDF uploaded in each round")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    values = run(args.small, args.large, args.corpus, args.upload, args.rounds)
    print(machine_line())
    ratio = values["upload_ratio"]
    print(verdict(f"upload_ratio ({values['pages_large']:,} / {values['pages_small']:,} pages)", ratio,  # type: ignore[arg-type]
                  TARGET, at_least=False))
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
