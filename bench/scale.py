"""Cost against corpus size (issue 41): one corpus grown through ``--sizes`` pages, measured at each size.

The corpus starts as a real ingest (``--base``: a data folder where the product ingested real PDFs with its
defaults, e.g. the sec-10q filings: ``mmrag --data-dir /work/data-h6/base ingest ../shared/corpus/sec-10q/pdf
-c sec10q``), copied into ``--data-dir``, and grows by distinct copies of its documents (what is synthetic:
bench/_scale_corpus.py). At each size, with the same queries (the suite's questions):

* search latency of four arms (bench/_scale_measure.py ``ARMS``: the default hybrid search with and without
  the learned ranker, the text space alone, one document's filter) through the product's retriever,
  in-process, after the server's warm-up; every query once per arm per round, ABBA-alternated;
* recall@10 of the approximate first stage against the exhaustive one (``QueryNode.exact``: a full scan), as
  the store's settings search (``store.full_scan_points``, ``store.hnsw_ef``), and with HNSW forced at each
  ``--recall-ef`` value (recall and the store's milliseconds: what the graph would keep at this size);
* a real one-file upload (``--upload``, a PDF through the ingestion job) to the search that finds it, and
  its delete; a forced BM25 re-weight of every page;
* bytes on disk per page (the whole data folder; the shard by vector), each vector's bytes per page;
* start-up to ready and resident memory of a fresh process that opens the folder as ``mmrag serve`` does.

    python -m bench.scale --sizes 5000,50000 [--base /work/data-h6/base] [--data-dir /work/data-h6/scale]
        [--out /work/data-h6/out] [--rounds 3] [--queries 40] [--recall-ef engine,100,200,400,800]

A large size takes hours to grow on a small machine: ``--keep`` grows ``--data-dir`` on from where an earlier
run left it (its copies continue after the documents it holds), and ``--small DIR`` measures a smaller folder
grown earlier from the same base first, in place, so that the RESULT's ratios still come from one run:

    python -m bench.scale --keep --grow-only --data-dir DIR --sizes 250000    # hours, on any load
    python -m bench.scale --keep --data-dir DIR --sizes 250000 --small DIR_5K  # measures both, quietly

Prints a table per size, writes it as JSON (and a PNG if matplotlib is installed) to ``--out``, and ends
with ``RESULT p50_ratio p99_ratio recall10 upload_ratio start_s rss_gb loaded`` (largest size / smallest).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench._scale_corpus import (
    BaseDocument,
    copies,
    copy_data_folder,
    copy_id,
    corpus_pages,
    drop_unlisted,
    grow,
    load_base,
    originals,
    vector_names,
)
from bench._scale_measure import (
    ARMS,
    Searchers,
    disk_by_vector,
    folder_bytes,
    forced_reweight,
    latencies,
    recall_at,
    recall_by_ef,
    rss_gb,
    startup,
    upload_and_delete,
    vector_footprint,
)
from bench._stats import LOAD_BEFORE, machine_line, result_line, verdict
from mmrag.config import Settings, load_settings
from mmrag.evaluate.stats import Estimate, interval, mean_stat, percentile_stat, ratio_interval
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import Pipeline, build_pipeline

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
UPLOAD = SHARED / "docling" / "pdf" / "normal_4pages.pdf"


@dataclass
class SizeRow:
    """Everything measured at one corpus size (``ms``: every search's latency per arm)."""

    pages: int
    documents: int
    ms: dict[str, list[float]]
    recall10: list[float]
    recall10_text: list[float]  # the text space alone (no document stage, no fusion)
    recall10_content: list[float]  # the default plan, a copy of the page found in its place counting
    upload_s: list[float]
    delete_s: list[float]
    reweight_s: float
    disk_bytes: int
    grown: dict[str, float]  # the growth step that reached this size: documents added, seconds per part
    start: dict[str, Any]  # bench/_scale_startup.py's line: seconds, GB, the store's resident bytes by part
    vectors: dict[str, float]  # bytes per page of each named vector
    disk_parts: dict[str, int] = field(default_factory=dict)
    rss_bench_gb: float = 0.0
    load: float = 0.0
    recall10_by_ef: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)  # plan -> ef ->
    # (mean, least, median ms in the store) of the first stage's recall against the exhaustive top 10

    def table(self) -> dict[str, float]:
        """The row as printed: p50/p99 per arm (ms), recall, seconds, bytes per page, GB."""
        out: dict[str, float] = {"pages": self.pages, "documents": self.documents}
        for arm, xs in self.ms.items():
            out[f"{arm}_p50_ms"] = float(np.percentile(xs, 50))
            out[f"{arm}_p99_ms"] = float(np.percentile(xs, 99))
        out.update(recall10=float(np.mean(self.recall10)), recall10_min=float(np.min(self.recall10)),
                   recall10_text=float(np.mean(self.recall10_text)),
                   recall10_content=float(np.mean(self.recall10_content)),
                   upload_s=float(np.median(self.upload_s)), delete_s=float(np.median(self.delete_s)),
                   reweight_s=self.reweight_s, disk_per_page=self.disk_bytes / self.pages,
                   grow_optimize_s=self.grown["optimize_s"],
                   start_s=self.start["ready_s"], opened_s=self.start["opened_s"] - self.start["warm_s"],
                   rss_gb=self.start["rss_gb"], pss_gb=self.start["pss_gb"], rss_bench_gb=self.rss_bench_gb,
                   vectors_per_page=sum(self.vectors.values()), load=self.load)
        return out


def summary(small: SizeRow, large: SizeRow, arm: str = "hybrid_ranker") -> dict[str, Estimate | float | int]:
    """The RESULT values: the largest size against the smallest (``arm``: the product's default search)."""
    return {
        "p50_ratio": ratio_interval(large.ms[arm], small.ms[arm]),
        "p99_ratio": ratio_interval(large.ms[arm], small.ms[arm], percentile_stat(99)),
        "recall10": interval(large.recall10, mean_stat),
        "upload_ratio": ratio_interval(large.upload_s, small.upload_s),
        "start_s": large.start["ready_s"],
        "rss_gb": large.start["rss_gb"],
        "pages_small": small.pages,
        "pages_large": large.pages,
    }


def search_settings(data_dir: Path) -> Settings:
    """The product's settings for ``data_dir`` (environment included), without the visual models."""
    settings = load_settings(data_dir=data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    settings.vlm.backend = "none"
    return settings


def measure(pipeline: Pipeline, data_dir: Path, corpus: str, queries: list[str], args: argparse.Namespace,
            grown: dict[str, float], original: dict[str, str]) -> tuple[SizeRow, Pipeline]:
    """Every measurement at the corpus's current size; the start-up closes the pipeline and opens it again
    (returned)."""
    pages, docs = corpus_pages(pipeline, corpus), pipeline.catalog.documents.listed(corpus, limit=1_000_000)
    print(f"== {pages:,} pages, {len(docs):,} documents (grown by {grown}); {machine_line()}", flush=True)
    pipeline.warm_up()
    searchers = Searchers.of(pipeline)
    originals = [d.id for d in docs[:args.base_documents]]
    for q in queries[:3]:
        for arm in ARMS:
            search, request = searchers.request(arm, q, originals[0])
            search(corpus, request)
    ms = latencies(searchers, corpus, queries, originals, args.rounds)
    recall, content = recall_at(searchers, corpus, queries[:args.recall_queries], original=original)
    recall_text, _ = recall_at(searchers, corpus, queries[:args.recall_queries], spaces=["text"])
    print(f"  recall@10 vs exhaustive: default plan mean {np.mean(recall):.4f} min {np.min(recall):.2f} (as page "
          f"contents {np.mean(content):.4f} min {np.min(content):.2f}); text alone mean {np.mean(recall_text):.4f} "
          f"min {np.min(recall_text):.2f}", flush=True)
    efs = [None if e == "engine" else int(e) for e in args.recall_ef.split(",") if e]
    by_ef = {plan: recall_by_ef(searchers, corpus, queries[:args.recall_queries], efs, spaces=spaces)
             for plan, spaces in (("text", ["text"]), ("default", None))} if efs else {}
    for plan, rows in by_ef.items():
        print(f"  recall@10 vs exhaustive by hnsw_ef ({plan}; the store's setting {pipeline.store.index.hnsw_ef}): "
              + " | ".join(f"{ef}: {m:.4f} (min {lo:.2f}, {ms:.1f} ms)" for ef, (m, lo, ms) in rows.items()),
              flush=True)
    up, dele = upload_and_delete(pipeline, corpus, args.upload, args.uploads)
    print(f"  upload to searchable {[round(x, 2) for x in up]} s; delete {[round(x, 3) for x in dele]} s", flush=True)
    reweight = forced_reweight(pipeline, corpus)
    names = vector_names(pipeline, corpus)
    vectors = vector_footprint(pipeline, corpus, names)
    bench_rss = rss_gb()
    pipeline.close()
    disk = folder_bytes(data_dir)
    parts = disk_by_vector(data_dir / "qdrant-edge" / corpus)
    start = startup(data_dir, corpus, queries)
    row = SizeRow(pages, len(docs), ms, recall, recall_text, content, up, dele, reweight, disk, grown, start,
                  vectors, parts, bench_rss, os.getloadavg()[0], by_ef)
    print(f"  reweight {reweight:.2f} s; disk {disk / pages:,.0f} B/page; start-up "
          f"{ {k: v for k, v in start.items() if k != 'resident'} }", flush=True)
    print("  resident after the queries by part (B/page): "
          + ", ".join(f"{k} {v / pages:,.0f}" for k, v in list(start["resident"].items())[:8]), flush=True)
    print("  vectors per page (B): " + ", ".join(f"{k} {v:,.0f}" for k, v in vectors.items())
          + " | shard on disk by part (B/page): "
          + ", ".join(f"{k} {v / pages:,.0f}" for k, v in list(parts.items())[:8]), flush=True)
    return row, build_pipeline(search_settings(data_dir))


def print_table(rows: list[SizeRow]) -> None:
    tables = [r.table() for r in rows]
    keys = list(tables[0])
    print("size table:")
    print(" | ".join(f"{k:>14}" for k in ["measure", *[f"{int(t['pages']):,} p" for t in tables]]))
    for k in keys:
        print(" | ".join([f"{k:>14}", *[f"{t[k]:>14,.3f}" if t[k] < 1000 else f"{t[k]:>14,.0f}" for t in tables]]))


def plot(rows: list[SizeRow], path: Path) -> bool:
    """Latency, memory, disk and upload against pages (log-log), if matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    tables = [r.table() for r in rows]
    pages = [t["pages"] for t in tables]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for arm in ARMS:
        axes[0].plot(pages, [t[f"{arm}_p50_ms"] for t in tables], "o-", label=f"{arm} p50")
        axes[0].plot(pages, [t[f"{arm}_p99_ms"] for t in tables], "x--", label=f"{arm} p99")
    for ax, key, title in ((axes[1], "rss_gb", "server RSS (GB)"), (axes[2], "disk_per_page", "disk per page (B)"),
                           (axes[3], "upload_s", "one-file upload to searchable (s)")):
        ax.plot(pages, [t[key] for t in tables], "o-")
        ax.set_title(title)
    axes[0].set_title("search latency (ms)")
    axes[0].legend(fontsize=6)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("pages")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def run(args: argparse.Namespace) -> list[SizeRow]:
    """Copy the base (or, with ``--keep``, go on from the folder as it is), then grow and measure through the
    sizes; ``--small``, a folder grown before, is measured first; returns the rows (bench and test)."""
    sizes = sorted(int(s) for s in args.sizes.split(","))
    queries = [q.text for q in load_suite(args.suite).queries][: args.queries]
    base = read_base(args.base, args.corpus)
    args.base_documents, base_pages = len(base), sum(len(b.pages) for b in base)
    rows = [measure_kept(args.small, args, queries, base, base_pages)] if args.small is not None else []
    if not args.keep:
        copy_data_folder(args.base, args.data_dir)
    pipeline = build_pipeline(search_settings(args.data_dir))
    try:
        dropped = drop_unlisted(pipeline, args.corpus)
        held = {d.id for d in pipeline.catalog.documents.listed(args.corpus, limit=10_000_000)}
        print(f"base: {len(base)} documents, {base_pages:,} pages from {args.base}; {args.data_dir} holds "
              f"{len(held):,} documents ({dropped} unfinished documents left out); {len(queries)} queries; "
              f"{machine_line()}", flush=True)
        todo = continued_copies(base, held)
        rng = np.random.default_rng((args.seed, len(held)) if args.keep else args.seed)  # a kept folder: new noise
        for size in sizes:
            grown = grow(pipeline, args.corpus, todo, size, rng)
            print(f"grown to {corpus_pages(pipeline, args.corpus):,} pages: {grown}", flush=True)
            if args.grow_only:
                continue
            made = corpus_pages(pipeline, args.corpus) // base_pages + 1  # copies begun
            row, pipeline = measure(pipeline, args.data_dir, args.corpus, queries, args, grown, originals(base, made))
            rows.append(row)
            args.out.mkdir(parents=True, exist_ok=True)  # what is measured so far, should a larger size fail
            (args.out / "scale.partial.json").write_text(json.dumps([asdict(r) for r in rows]))
    finally:
        pipeline.close()
    return rows


def read_base(folder: Path, corpus: str) -> list[BaseDocument]:
    """The real ingest's documents (read from its folder, which stays as it is)."""
    pipeline = build_pipeline(search_settings(folder), run_jobs=False, lock=False)
    try:
        return load_base(pipeline, corpus)
    finally:
        pipeline.close()


def continued_copies(base: list[BaseDocument], held: set[str]) -> Iterator[tuple[int, BaseDocument]]:
    """The copies a folder does not hold yet (``held``: its document ids), in :func:`copies`' order: a folder
    grown before goes on with distinct documents whatever order its copies were made in."""
    return ((k, b) for k, b in copies(base) if copy_id(b.info.id, k) not in held)


def measure_kept(folder: Path, args: argparse.Namespace, queries: list[str], base: list[BaseDocument],
                 base_pages: int) -> SizeRow:
    """Measure a folder this benchmark grew before (``--small``), in place, as it is (no growth)."""
    pipeline = build_pipeline(search_settings(folder))
    made = corpus_pages(pipeline, args.corpus) // base_pages + 1  # copies begun, as in run()
    none = {"documents": 0.0, "write_s": 0.0, "reweight_s": 0.0, "optimize_s": 0.0}
    row, pipeline = measure(pipeline, folder, args.corpus, queries, args, none, originals(base, made))
    pipeline.close()
    return row


def report(rows: list[SizeRow], out: Path) -> dict[str, Estimate | float | int]:
    out.mkdir(parents=True, exist_ok=True)
    print_table(rows)
    (out / "scale.json").write_text(json.dumps({"rows": [r.table() for r in rows], "raw": [asdict(r) for r in rows],
                                                "load_before": LOAD_BEFORE}, indent=1))
    if plot(rows, out / "scale.png"):
        print(f"plot: {out / 'scale.png'}")
    values = summary(rows[0], rows[-1])
    print(machine_line())
    for name, target, at_least in (("p50_ratio", 2.0, False), ("p99_ratio", 3.0, False), ("recall10", 0.99, True),
                                   ("upload_ratio", 1.5, False)):
        est = values[name]
        assert isinstance(est, Estimate)
        print(verdict(name, est, target, at_least=at_least))
    print(result_line(values))
    return values


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="5000,50000", help="corpus sizes in pages, comma-separated")
    ap.add_argument("--base", type=Path, default=Path("/work/data-h6/base"), help="data folder of the real ingest")
    ap.add_argument("--corpus", default="sec10q", help="the base's corpus")
    ap.add_argument("--data-dir", type=Path, default=Path("/work/data-h6/scale"),
                    help="the grown corpus (replaced by a copy of the base unless --keep)")
    ap.add_argument("--keep", action="store_true",
                    help="grow --data-dir on from where an earlier run of this benchmark left it")
    ap.add_argument("--grow-only", action="store_true",
                    help="grow --data-dir through the sizes and measure nothing (a later --keep run measures)")
    ap.add_argument("--small", type=Path, default=None,
                    help="a smaller folder an earlier run grew from the same base: measured first, in place, "
                         "as the smallest size (no growth)")
    ap.add_argument("--out", type=Path, default=Path("/work/data-h6/out"))
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--recall-queries", type=int, default=20)
    ap.add_argument("--recall-ef", default="engine,100,200,400,800",
                    help="hnsw_ef values whose recall and store time are also measured ('engine': the engine's own)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--uploads", type=int, default=3)
    ap.add_argument("--upload", type=Path, default=UPLOAD, help="the PDF uploaded at each size")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def main() -> None:
    args = parser().parse_args()
    rows = run(args)
    if not args.grow_only:
        report(rows, args.out)


if __name__ == "__main__":
    main()
