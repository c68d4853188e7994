"""Scale test of the document stage (issue 15): does ranking hold when look-alike documents are added?

The single-document questions of the sec-10q suite whose judged report belongs to one group (by default
the quarter "2023 Q3": its five companies' reports) are asked twice through ``Pipeline.search``: over the
group alone (``document_ids`` restricted to it on every stage) and over the whole corpus (all twenty
reports, fifteen near-identical distractors). Document level nDCG@5 (documents ranked by their best
page), with the document stage and with the page spaces only. The value is ``large / small`` with a
95 % bootstrap interval over questions (paired: the same questions in both arms).

Needs a data folder where the suite was ingested, e.g.::

    mmrag eval run eval/suites/sec-10q --data-dir /tmp/sec10q --no-plots
    python -m bench.doc_scale --data-dir /tmp/sec10q

Caveat: the small arm filters the large corpus, so BM25 IDF is the whole collection's in both arms.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from bench._stats import CONFIDENCE, Estimate, machine_line, result_line, verdict
from mmrag.config import load_settings
from mmrag.evaluate.metrics import query_metrics
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import build_pipeline
from mmrag.types import SearchRequest

ARMS = {"document": ["text", "bm25", "document"], "pages": ["text", "bm25"]}


def ratio_of_means(large: list[float], small: list[float], samples: int = 10_000, seed: int = 0) -> Estimate:
    """mean(large) / mean(small) over paired questions, with a percentile-bootstrap interval."""
    a, b = np.asarray(large, dtype=float), np.asarray(small, dtype=float)
    idx = np.random.default_rng(seed).integers(0, a.size, size=(samples, a.size))
    boot = a[idx].mean(axis=1) / np.maximum(b[idx].mean(axis=1), 1e-12)
    alpha = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return Estimate(float(a.mean() / max(b.mean(), 1e-12)), float(lo), float(hi), int(a.size))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="data folder holding the ingested suite")
    ap.add_argument("--suite", default="eval/suites/sec-10q")
    ap.add_argument("--group", default="2023 Q3", help="file-name prefix of the small corpus's documents")
    args = ap.parse_args()

    settings = load_settings(data_dir=args.data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    pipeline = build_pipeline(settings, run_jobs=False)
    try:
        suite = load_suite(args.suite)
        corpus = suite.corpus_name
        group = [d.id for d in pipeline.catalog.list_documents(corpus) if d.filename.startswith(args.group)]
        questions = [q for q in suite.queries if "single-doc" in q.tags
                     and all(name.startswith(args.group) for name in suite.qrels[q.id])]
        print(f"{len(questions)} questions about {args.group!r}; {len(group)} documents in the group")
        print(machine_line())
        values: dict[str, Estimate | float] = {}
        for arm, spaces in ARMS.items():
            ndcg: dict[str, list[float]] = {"small": [], "large": []}
            for q in questions:
                for size, ids in (("small", group), ("large", None)):
                    r = pipeline.search(corpus, SearchRequest(query=q.text, top_k=30, spaces=spaces, document_ids=ids))
                    ranked = list(dict.fromkeys(e.filename for e in sorted(r.evidence, key=lambda e: -e.score)))
                    ndcg[size].append(query_metrics(ranked, suite.qrels[q.id], ["ndcg"], [5])["ndcg@5"])
            est = ratio_of_means(ndcg["large"], ndcg["small"])
            values[f"{arm}_small_ndcg5"] = statistics.mean(ndcg["small"])
            values[f"{arm}_large_ndcg5"] = statistics.mean(ndcg["large"])
            values[f"{arm}_scale_ratio"] = est
            print(verdict(f"{arm}_scale_ratio", est, 0.95, at_least=True))
        print(result_line(values))
    finally:
        pipeline.close()


if __name__ == "__main__":
    main()
