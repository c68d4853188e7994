"""BM25 details at scale (issue 15): the average page length it normalises by, and chunk vs page granularity.

On an already-ingested sec-10q data folder (a COPY: the bench rewrites its ``bm25`` vectors), document-level
nDCG@5 (documents ranked by their best page, the suite's judge) of the suite's 195 questions for:

* ``avg300`` / ``avgown``: the stored BM25 vectors re-weighted (``mmrag.jobs.bm25_stats.reweight``, the
  production path) to the fixed 300 of old corpora and to the corpus's own average page length in BM25
  tokens; each arm asks every question through ``Pipeline.search`` with BM25 alone (``bm25``), the page
  spaces (``hybrid``: text + bm25, DBSF) and the suite's default (``default``: + the document stage);
* ``page`` / ``chunk``: exact BM25 computed here from the catalog's text with the same tokenizer
  (``qdrant_edge.Bm25``, token counts recovered exactly, :func:`mmrag.spaces.bm25.bm25_length`) and the
  IDF Qdrant applies, ``ln((N - n + 0.5) / (n + 0.5) + 1)``: each page one BM25 document (its own average),
  or each chunk of ``chunk_words`` (the text spaces' chunks; chunks are the documents, their own average and
  IDF) with a page scored by its best chunk. ``page`` is checked against the store's scores of ``avgown``.

The questions are split into rounds (every ``rounds``-th question); the arms alternate ABBA per round.
Values are means over questions with 95 % bootstrap intervals, and paired differences ``avgown - avg300``
and ``chunk - page`` over the same questions.

    cp -a DIR /tmp/bm25-data   # DIR: where `mmrag eval run eval/suites/sec-10q --data-dir DIR` ingested it
    python -m bench.bm25_granularity --data-dir /tmp/bm25-data
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import numpy as np

from bench._stats import alternate, machine_line, result_line
from bench._suite_data import open_search_pipeline, suite_data_args
from mmrag.evaluate.metrics import query_metrics
from mmrag.evaluate.stats import Estimate, interval, mean_stat
from mmrag.evaluate.suite import Query, load_suite
from mmrag.ingest.chunking import chunk_page
from mmrag.jobs.bm25_stats import corpus_avg_len, reweight
from mmrag.pipeline import Pipeline
from mmrag.spaces.bm25 import bm25_model, bm25_term_counts, bm25_text
from mmrag.types import SearchRequest, section_line

K, B = 1.2, 0.75
SPACE_SETS = {"bm25": ["bm25"], "hybrid": ["text", "bm25"], "default": None}


class ExactBm25:
    """BM25 over given texts exactly as Qdrant scores the stored vectors (query tokens weigh 1)."""

    def __init__(self, texts: list[str]) -> None:
        self.n = len(texts)
        postings: dict[int, list[tuple[int, float]]] = defaultdict(list)
        lengths = np.zeros(self.n)
        for i, text in enumerate(texts):
            for idx, tf in bm25_term_counts(text).items():
                postings[idx].append((i, tf))
                lengths[i] += tf
        used = lengths > 0
        self.avg = float(lengths[used].mean())
        docs = int(used.sum())  # points with a bm25 vector (Qdrant's N)
        self.postings = {t: (np.array([d for d, _ in p]), np.array([f for _, f in p], dtype=float))
                         for t, p in postings.items()}
        self.idf = {t: math.log((docs - len(p[0]) + 0.5) / (len(p[0]) + 0.5) + 1.0) for t, p in self.postings.items()}
        self.norm = K * (1 - B + B * lengths / self.avg)
        self.query_model = bm25_model(self.avg)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n)
        for t in set(self.query_model.embed_query(query).indices):
            if t in self.postings:
                d, tf = self.postings[t]
                out[d] += self.idf[t] * tf * (K + 1) / (tf + self.norm[d])
        return out


def ranked_documents(scores: np.ndarray, owners: list[str]) -> list[str]:
    """File names by their best unit's score (units with a score > 0)."""
    best: dict[str, float] = {}
    for s, name in zip(scores.tolist(), owners, strict=True):
        if s > 0 and s > best.get(name, 0.0):
            best[name] = s
    return sorted(best, key=lambda n: -best[n])


def ndcg5(ranked: list[str], judgments: dict[str, int]) -> float:
    return query_metrics(ranked, judgments, ["ndcg"], [5])["ndcg@5"]


def search_ranked(pipeline: Pipeline, corpus: str, q: Query, spaces: list[str] | None) -> tuple[list[str], list]:
    r = pipeline.search(corpus, SearchRequest(query=q.text, top_k=100, spaces=spaces))
    hits = sorted(r.evidence, key=lambda e: -e.score)
    return list(dict.fromkeys(e.filename for e in hits)), hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    suite_data_args(ap)  # --data-dir: a COPY of the folder (this bench rewrites vectors in it)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    settings, pipeline = open_search_pipeline(args.data_dir)
    try:
        suite = load_suite(args.suite)
        corpus = suite.corpus_name
        docs = pipeline.catalog.documents.listed(corpus, limit=100_000)
        names = {d.id: d.filename for d in docs}
        pages = [p for d in docs for p in pipeline.catalog.pages.stored(corpus, d.id)]
        page_text = [bm25_text(p.text, section_line(p.context)) for p in pages]
        own = corpus_avg_len(pipeline.catalog, corpus)
        assert own is not None, f"corpus {corpus!r} has no text"
        chunk_owner, chunk_text = [], []
        for p in pages:
            for c in chunk_page(p, settings.ingest.chunk_words, settings.ingest.chunk_overlap):
                chunk_owner.append(names[p.document_id])
                chunk_text.append(bm25_text(c.text, section_line(p.context)))
        exact_page, exact_chunk = ExactBm25(page_text), ExactBm25(chunk_text)
        page_owner = [names[p.document_id] for p in pages]
        words = np.mean([len(t.split()) for t in page_text])
        print(f"{len(docs)} documents, {len(pages)} pages ({words:.0f} words, {own:.1f} BM25 tokens on average), "
              f"{len(chunk_text)} chunks ({exact_chunk.avg:.1f} tokens on average)")
        print(machine_line())

        queries = suite.queries
        rounds = [queries[r::args.rounds] for r in range(args.rounds)]
        per_q: dict[str, dict[str, float]] = defaultdict(dict)  # variant -> question id -> nDCG@5
        store_scores: dict[str, list[float]] = {}

        def store_arm(name: str, avg: float):
            def run(r: int) -> float:
                done = reweight(pipeline.catalog, pipeline.store, corpus, avg)
                print(f"  {name}: re-weighted {done.pages} pages to {avg:.1f} in {done.seconds:.2f}s")
                for q in rounds[r]:
                    for label, spaces in SPACE_SETS.items():
                        ranked, hits = search_ranked(pipeline, corpus, q, spaces)
                        per_q[f"{label}_{name}"][q.id] = ndcg5(ranked, suite.qrels[q.id])
                        if label == "bm25" and name == "avgown" and hits:
                            store_scores[q.id] = [h.score for h in hits[:5]]
                return float(np.mean([per_q[f"bm25_{name}"][q.id] for q in rounds[r]]))
            return run

        def exact_arm(name: str, index: ExactBm25, owners: list[str]):
            def run(r: int) -> float:
                for q in rounds[r]:
                    per_q[f"bm25_{name}"][q.id] = ndcg5(ranked_documents(index.scores(q.text), owners),
                                                       suite.qrels[q.id])
                return float(np.mean([per_q[f"bm25_{name}"][q.id] for q in rounds[r]]))
            return run

        alternate({"avg300": store_arm("avg300", 300.0), "avgown": store_arm("avgown", own),
                   "page": exact_arm("page", exact_page, page_owner),
                   "chunk": exact_arm("chunk", exact_chunk, chunk_owner)}, len(rounds))

        # the exact page BM25 must score as the engine does (same vectors, same IDF): compare the top scores
        gaps = []
        for q in queries:
            if q.id in store_scores:
                top = np.sort(exact_page.scores(q.text))[::-1][:len(store_scores[q.id])]
                gaps.append(float(np.max(np.abs(top - store_scores[q.id]) / np.maximum(top, 1e-9))))
        print(f"exact page BM25 vs the store's BM25 scores: max relative gap {max(gaps):.2e} over {len(gaps)} queries")

        ids = [q.id for q in queries]
        values: dict[str, Estimate | float | int | str] = {
            "pages": len(pages), "avg_words": float(words), "avg_tokens": own, "chunk_avg_tokens": exact_chunk.avg}
        for variant in sorted(per_q):
            values[f"{variant}_ndcg5"] = interval([per_q[variant][i] for i in ids], mean_stat)
        for label in SPACE_SETS:
            values[f"{label}_own_minus_300"] = interval(
                [per_q[f"{label}_avgown"][i] - per_q[f"{label}_avg300"][i] for i in ids], mean_stat)
        values["chunk_minus_page"] = interval([per_q["bm25_chunk"][i] - per_q["bm25_page"][i] for i in ids], mean_stat)
        for name, v in values.items():
            print(f"  {name}: {v}")
        print(result_line(values))
    finally:
        pipeline.close()


if __name__ == "__main__":
    main()
