"""Chunk context (issue 15): which header lines should each text chunk be embedded with?

Arms: ``chunk_context`` none / document (the document's label: title · entity · period) / section (the
page's section path) / both, each with the document stage on (spaces text, bm25, document) and off
(text, bm25). Measured on the sec-10q suite at document level: nDCG@5 of documents ranked by their best
page among the top 100 pages, as the suite judges them.

No re-ingestion and one corpus: the already-ingested suite's corpus (ingested without page context)
keeps its BM25 and document vectors; only its dense ``text`` vectors are swapped per arm
(``VectorStore.update_vectors``). ``none`` is the corpus's own text vectors; every other variant's are
embedded once from the catalog's pages through the product's ``embed_pages`` (the ``text`` space with
the variant's ``chunk_context``; section paths from the source PDFs,
:func:`mmrag.ingest.page_context.section_paths`, file names match the catalog's) and cached under
``<data-dir>/chunk_context/`` (resumed per document). The data folder is modified: run it on a copy::

    cp -a DIR /tmp/cc-data   # DIR: where `mmrag eval run eval/suites/sec-10q --data-dir DIR` ingested it
    python -m bench.chunk_context --data-dir /tmp/cc-data [--rounds 5] [--sample 0]

Questions are shuffled (seeded) and split into ``--rounds`` rounds; in each round every arm answers
that round's questions, arms in alternating order (ABBA). Per arm: the mean nDCG@5 over all questions
with a 95 % bootstrap interval over questions, and each variant's paired difference from ``none``;
RESULT also has the median over rounds of each arm's round mean.
"""

from __future__ import annotations

import argparse
import pickle
import random
import statistics
import time
from pathlib import Path

import numpy as np
import pymupdf

from bench._stats import alternate, machine_line, result_line
from bench._suite_data import open_search_pipeline, suite_data_args
from mmrag.evaluate.metrics import query_metrics
from mmrag.evaluate.stats import Estimate, interval, mean_stat
from mmrag.evaluate.suite import Query, Suite, load_suite
from mmrag.ingest.page_context import section_paths
from mmrag.jobs.embedding import embed_pages
from mmrag.pipeline import Pipeline
from mmrag.store.base import VectorValue
from mmrag.types import Document, SearchRequest

VARIANTS: dict[str, list[str]] = {"none": [], "section": ["section"], "document": ["document"],
                                  "both": ["document", "section"]}
STAGES = {"doc": ["text", "bm25", "document"], "pages": ["text", "bm25"]}


def sections_of(pdf_dir: Path, filename: str) -> dict[int, list[str]]:
    with pymupdf.open(pdf_dir / filename) as doc:
        return section_paths(doc, 1, doc.page_count)[0]


Vectors = dict[str, VectorValue]  # point id -> its text multi-vector


def variant_vectors(pipeline: Pipeline, corpus: str, variant: str, sections: dict[str, dict[int, list[str]]],
                    cache_dir: Path) -> Vectors:
    """The text vectors of every page of ``corpus`` embedded with the variant's chunk context (cached)."""
    path = cache_dir / f"{variant}.pkl"
    cached: dict[str, Vectors] = pickle.loads(path.read_bytes()) if path.exists() else {}
    config = pipeline.catalog.corpora.config(corpus).model_copy(update={"chunk_context": VARIANTS[variant]})
    t0 = time.perf_counter()
    for info in pipeline.catalog.documents.listed(corpus):
        if info.id in cached:
            continue
        pages = pipeline.catalog.pages.stored(corpus, info.id)
        for page in pages:
            page.context = sections[info.filename].get(page.number, [])
        doc = Document(id=info.id, filename=info.filename, media_type=info.media_type, size_bytes=info.size_bytes,
                       pages=pages, metadata=info.metadata)
        points = embed_pages(doc, pipeline.spaces, ["text"], pipeline.settings.ingest, config)
        cached[info.id] = {p.id: p.vectors["text"] for p in points if "text" in p.vectors}
        path.write_bytes(pickle.dumps(cached))
        print(f"{variant}: {info.filename} ({len(pages)} pages) at {time.perf_counter() - t0:.0f} s", flush=True)
    return {pid: v for doc_vectors in cached.values() for pid, v in doc_vectors.items()}


def document_ndcg(pipeline: Pipeline, corpus: str, suite: Suite, q: Query, spaces: list[str]) -> float:
    r = pipeline.search(corpus, SearchRequest(query=q.text, top_k=100, spaces=spaces))
    ranked = list(dict.fromkeys(e.filename for e in sorted(r.evidence, key=lambda e: -e.score)))
    return query_metrics(ranked, suite.qrels[q.id], ["ndcg"], [5])["ndcg@5"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    suite_data_args(ap)  # --data-dir: a COPY of the folder (this bench rewrites vectors in it)
    ap.add_argument("--pdf-dir", type=Path, default=Path("../shared/corpus/sec-10q/pdf"),
                    help="the suite's PDFs (relative: to the repository root)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sample", type=int, default=0, help="questions to ask (seeded sample); 0: all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", nargs="+", default=["section", "document", "both"], choices=list(VARIANTS)[1:],
                    help="variants measured against none (embedded in this order)")
    args = ap.parse_args()

    _, pipeline = open_search_pipeline(args.data_dir)
    try:
        suite = load_suite(args.suite)
        source = suite.corpus_name
        t0 = time.perf_counter()
        documents = pipeline.catalog.documents.listed(source)
        sections = {d.filename: sections_of(args.pdf_dir, d.filename) for d in documents}
        print(f"section paths of {len(sections)} PDFs in {time.perf_counter() - t0:.1f} s")
        variants = ["none", *args.variants]
        own = {h.id: h.vectors["text"] for h in pipeline.store.scroll(source, limit=100_000, with_vectors=["text"])
               if "text" in h.vectors}
        cache_dir = args.data_dir / "chunk_context"
        cache_dir.mkdir(exist_ok=True)
        vectors = {"none": own, **{v: variant_vectors(pipeline, source, v, sections, cache_dir) for v in args.variants}}
        assert all(set(v) == set(own) for v in vectors.values()), "every variant has every page's text vectors"
        current = ["none"]

        def use(variant: str) -> None:
            if current[0] != variant:
                t = time.perf_counter()
                pipeline.store.update_vectors(source, {pid: {"text": v} for pid, v in vectors[variant].items()})
                current[0] = variant
                print(f"  text vectors of {variant} in place ({time.perf_counter() - t:.1f} s)", flush=True)
        questions = list(suite.queries)
        random.Random(args.seed).shuffle(questions)
        if args.sample:
            questions = questions[:args.sample]
        rounds = [questions[r::args.rounds] for r in range(args.rounds)]
        print(f"{len(questions)} questions in {args.rounds} rounds; {machine_line()}")
        scores: dict[str, dict[str, float]] = {}  # arm -> question id -> nDCG@5

        def arm(variant: str, stage: str):
            name = f"{variant}/{stage}"

            def run(r: int) -> float:
                use(variant)
                got = scores.setdefault(name, {})
                for q in rounds[r]:
                    got[q.id] = document_ndcg(pipeline, source, suite, q, STAGES[stage])
                return statistics.mean(got[q.id] for q in rounds[r])
            return name, run

        arms = dict(arm(v, s) for v in variants for s in STAGES)  # a variant's two arms run back to back
        per_round = alternate(arms, args.rounds)
        ids = [q.id for q in questions]
        values: dict[str, Estimate | float | int | str] = {"questions": len(ids)}
        for name in arms:
            key = name.replace("/", "_")
            mean = interval([scores[name][i] for i in ids], mean_stat)
            values[f"{key}_ndcg5"] = mean
            values[f"{key}_round_median"] = interval(per_round[name])
            by_tag = {tag: statistics.mean(scores[name][q.id] for q in questions if tag in q.tags)
                      for tag in ("single-doc", "multi-doc") if any(tag in q.tags for q in questions)}
            print(f"{name:16s} nDCG@5 mean {mean.value:.3f} [{mean.lo:.3f}, {mean.hi:.3f}] "
                  + " ".join(f"{tag} {v:.3f}" for tag, v in by_tag.items()))
        for stage in STAGES:
            base = np.asarray([scores[f"none/{stage}"][i] for i in ids])
            for variant in args.variants:
                diff = interval(list(np.asarray([scores[f"{variant}/{stage}"][i] for i in ids]) - base), mean_stat)
                values[f"{variant}_{stage}_minus_none"] = diff
                print(f"{variant}/{stage} - none/{stage}: {diff.value:+.3f} [{diff.lo:+.3f}, {diff.hi:+.3f}]")
        print(result_line(values))
        use("none")  # the corpus as it was
    finally:
        pipeline.close()


if __name__ == "__main__":
    main()
