"""Search latency with and without the document stage, side by side on one corpus of 1,000+ pages.

The corpus is an evaluation suite's (default ``eval/suites/sec-10q``: 20 filings, 1,037 pages) ingested
into a data folder by ``mmrag eval run SUITE --data-dir DIR`` (reused, not rebuilt). Both arms run the
product's search (``Pipeline.search``: plan, one Qdrant query, hydrate) for the suite's questions, in
rounds in which the arms alternate per question (ABBA: both arms see the same load); a round's value per
arm is the median latency of its questions.

    python -m bench.doc_stage --data-dir DIR [--rounds 7] [--queries 40]

RESULT: ``p50_ratio`` (document stage / pages only, per-round ratio of medians) and each arm's p50 in ms,
medians over rounds with 95 % bootstrap intervals. Target: p50_ratio <= 1.3 (its upper bound).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench._stats import machine_line, result_line, verdict
from bench._suite_data import open_search_pipeline, suite_data_args
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.evaluate.suite import load_suite
from mmrag.types import SearchRequest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    suite_data_args(ap)
    ap.add_argument("--corpus", default=None, help="default: the suite's corpus name")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--top-k", type=int, default=10)
    args = ap.parse_args()
    suite = load_suite(args.suite)
    _, pipeline = open_search_pipeline(args.data_dir)
    corpus = args.corpus or suite.corpus_name
    spaces = pipeline.catalog.corpora.config(corpus).spaces
    pages = sum(d.page_count for d in pipeline.catalog.documents.listed(corpus))
    texts = [q.text for q in suite.queries[: args.queries]]
    requests = {"pages": [SearchRequest(query=t, top_k=args.top_k, spaces=[s for s in spaces if s != "document"])
                          for t in texts],
                "document": [SearchRequest(query=t, top_k=args.top_k, spaces=spaces) for t in texts]}
    for request in requests["document"][:3] + requests["pages"][:3]:  # warm the models and the engine
        pipeline.search(corpus, request)

    def timed(name: str, i: int) -> float:
        t0 = time.perf_counter()
        pipeline.search(corpus, requests[name][i])
        return (time.perf_counter() - t0) * 1000

    print(f"corpus {corpus}: {pages} pages, spaces {spaces}; {len(texts)} queries x {args.rounds} rounds")
    print(machine_line())
    out: dict[str, list[float]] = {"pages": [], "document": []}
    for r in range(args.rounds):  # the arms alternate per query (ABBA), so both see the same load
        times: dict[str, list[float]] = {"pages": [], "document": []}
        for i in range(len(texts)):
            for name in ("pages", "document") if (r + i) % 2 == 0 else ("document", "pages"):
                times[name].append(timed(name, i))
        for name in out:
            out[name].append(statistics.median(times[name]))
        print(f"round {r + 1}/{args.rounds}: pages {out['pages'][-1]:.1f} ms | document {out['document'][-1]:.1f} ms"
              f" | load {os.getloadavg()[0]:.1f}")
    ratio = interval(paired_ratios(out["document"], out["pages"]))
    print(verdict("p50_ratio", ratio, 1.3, at_least=False))
    print(result_line({"p50_ratio": ratio, "p50_pages_ms": interval(out["pages"]),
                       "p50_document_ms": interval(out["document"]), "pages": pages}))
    pipeline.close()


if __name__ == "__main__":
    main()
