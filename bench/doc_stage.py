"""Search latency with and without the document stage, side by side on one corpus of 1,000+ pages.

The corpus is an evaluation suite's (default ``eval/suites/sec-10q``: 20 filings, 1,037 pages) ingested
into a data folder by ``mmrag eval run SUITE --data-dir DIR`` (reused, not rebuilt). Both arms run the
product's search (``Pipeline.search``: plan, one Qdrant query, hydrate) for the suite's questions, in
alternating rounds (ABBA); a round's value per arm is the median latency of its questions.

    python -m bench.doc_stage --data-dir /work/notes/sec10q-exp [--rounds 7] [--queries 40]

RESULT: ``p50_ratio`` (document stage / pages only, per-round ratio of medians) and each arm's p50 in ms,
medians over rounds with 95 % bootstrap intervals. Target: p50_ratio <= 1.3 (its upper bound).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench._stats import alternate, interval, machine_line, paired_ratios, result_line, verdict
from mmrag.config import load_settings
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline
from mmrag.types import SearchRequest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--suite", default="eval/suites/sec-10q")
    ap.add_argument("--corpus", default=None, help="default: the suite's corpus name")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--top-k", type=int, default=10)
    args = ap.parse_args()
    suite = load_suite(args.suite)
    settings = load_settings(data_dir=args.data_dir)
    settings.embed.clip_model = None
    settings.embed.colpali_model = None
    pipeline = build_pipeline(settings, run_jobs=False)
    corpus = args.corpus or suite.corpus_name
    spaces = pipeline.catalog.corpus_config(corpus).spaces
    pages = sum(d.page_count for d in pipeline.catalog.list_documents(corpus))
    texts = [q.text for q in suite.queries[: args.queries]]
    requests = {"pages": [SearchRequest(query=t, top_k=args.top_k, spaces=[s for s in spaces if s != "document"])
                          for t in texts],
                "document": [SearchRequest(query=t, top_k=args.top_k, spaces=spaces) for t in texts]}
    for request in requests["document"][:3] + requests["pages"][:3]:  # warm the models and the engine
        pipeline.search(corpus, request)

    def arm(name: str):
        def run(_round: int) -> float:
            times = []
            for request in requests[name]:
                t0 = time.perf_counter()
                pipeline.search(corpus, request)
                times.append(time.perf_counter() - t0)
            return statistics.median(times) * 1000
        return run

    print(f"corpus {corpus}: {pages} pages, spaces {spaces}; {len(texts)} queries x {args.rounds} rounds")
    print(machine_line())
    out = alternate({"pages": arm("pages"), "document": arm("document")}, args.rounds)
    ratio = interval(paired_ratios(out["document"], out["pages"]))
    print(verdict("p50_ratio", ratio, 1.3, at_least=False))
    print(result_line({"p50_ratio": ratio, "p50_pages_ms": interval(out["pages"]),
                       "p50_document_ms": interval(out["document"]), "pages": pages}))
    pipeline.close()


if __name__ == "__main__":
    main()
