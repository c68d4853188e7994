"""Search latency at each text precision (issue 29): the same ingested corpus searched with queries
embedded in ``int8`` (the default) and in ``float32``, alternated, in one process.

The corpus of ``--suite`` ingested under ``--data-dir`` (``mmrag eval run SUITE --data-dir DIR``; the
filings suite is 5,002 pages) is opened once; its text space embeds queries through one of two loaded
copies of the text model, switched between arms, so store, catalog and ranker are the same objects for
both. Every round searches the first ``--queries`` questions of the suite once per arm (order ABBA over
rounds) through ``Pipeline.search`` (``top_k`` 10, the product's defaults: document stage and ranker
on; the pipeline warmed up as the server's start-up warms it), and times each search end to end and each
query's text embedding alone.

Per round and arm: the median and the 99th percentile of the search times over that round's searches
(:func:`mmrag.evaluate.stats.latency_stats`, the statistic every latency report of the project uses);
``p50_ratio`` and ``p99_ratio`` are int8 ÷ float32 paired per round, with bootstrap intervals over
rounds. Targets (issue 29): p50 ≤ 0.7 of float32's, p99 no worse (≤ 1.0).

    python -m bench.search_precision --data-dir DIR [--suite eval/suites/filings] [--rounds 6] [--queries 100]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench._stats import machine_line, result_line, verdict
from mmrag.config import load_settings
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind, load_embedder
from mmrag.evaluate.stats import interval, latency_stats, paired_ratios
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline
from mmrag.types import SearchRequest

ARMS = ("int8", "float32")


class Switched(Embedder):
    """One text embedder for the pipeline whose forward is one of several loaded models (``use(name)``)."""

    def __init__(self, models: dict[str, Embedder]) -> None:
        self.models = models
        self.current = next(iter(models))
        first = models[self.current]
        self.spec, self.modalities, self.multivector = first.spec, first.modalities, first.multivector
        self.dim, self.max_batch = first.dim, first.max_batch

    def use(self, name: str) -> None:
        self.current = name

    @property
    def precision(self) -> str | None:  # type: ignore[override]
        return self.models[self.current].precision

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        return self.models[self.current].embed_batch(items, kind)

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        return self.models[self.current].prepare(items, kind)

    def size(self, prepared: Any) -> int:
        return self.models[self.current].size(prepared)

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        return self.models[self.current].compute(prepared, kind)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="data folder holding the ingested suite (read only)")
    ap.add_argument("--suite", default="eval/suites/filings")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()

    suite = load_suite(args.suite)
    questions = [q.text for q in suite.queries[: args.queries]]
    settings = load_settings(data_dir=args.data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    models = {arm: load_embedder(settings.embed.text_model, EmbedderOptions(device="cpu", text_precision=arm))
              for arm in ARMS}
    text = Switched(models)
    pipeline = build_pipeline(settings, embedders={"text": text}, run_jobs=False)
    pipeline.warm_up()  # as the server's start-up does (models, rankers, then gc.freeze)
    pages = pipeline.corpora.summary(suite.corpus_name).pages
    print(machine_line())
    print(f"corpus {suite.corpus_name}: {pages} pages, {len(questions)} questions, {args.rounds} rounds")
    for arm in ARMS:  # warm-up, not timed: sessions, and the ranker's page traits cached for every candidate
        text.use(arm)
        for q in questions if arm == ARMS[0] else questions[:5]:
            pipeline.search(suite.corpus_name, SearchRequest(query=q, top_k=10))
    p50: dict[str, list[float]] = {a: [] for a in ARMS}
    tail: dict[str, list[float]] = {a: [] for a in ARMS}
    embed: dict[str, list[float]] = {a: [] for a in ARMS}
    try:
        for r in range(args.rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                text.use(arm)
                searches, embeds = [], []
                for q in questions:
                    t = time.perf_counter()
                    models[arm].embed(q, "query")
                    embeds.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    pipeline.search(suite.corpus_name, SearchRequest(query=q, top_k=10))
                    searches.append(time.perf_counter() - t)
                stats = latency_stats(searches)  # the project's one p50/p99 (linear interpolation)
                p50[arm].append(stats.p50 * 1000)
                tail[arm].append(stats.p99 * 1000)
                embed[arm].append(float(np.median(embeds)) * 1000)
            print(f"round {r + 1}/{args.rounds}: " + " | ".join(
                f"{a} p50 {p50[a][-1]:.1f} ms p99 {tail[a][-1]:.1f} ms embed {embed[a][-1]:.1f} ms" for a in ARMS),
                flush=True)
    finally:
        pipeline.close()
    p50_ratio = interval(paired_ratios(p50["int8"], p50["float32"]))
    p99_ratio = interval(paired_ratios(tail["int8"], tail["float32"]))
    embed_ratio = interval(paired_ratios(embed["int8"], embed["float32"]))
    print(machine_line())
    print(verdict("search p50 int8 / float32", p50_ratio, 0.7, at_least=False))
    print(verdict("search p99 int8 / float32", p99_ratio, 1.0, at_least=False))
    print(result_line({"p50_ratio": p50_ratio, "p99_ratio": p99_ratio, "embed_ratio": embed_ratio,
                       "p50_int8_ms": interval(p50["int8"]), "p50_float32_ms": interval(p50["float32"]),
                       "p99_int8_ms": interval(tail["int8"]), "p99_float32_ms": interval(tail["float32"]),
                       "pages": pages, "queries": len(questions)}))


if __name__ == "__main__":
    main()
