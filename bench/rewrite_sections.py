"""Section paths rewritten on a COPY of an ingested data folder: a change to the heading rules measured on
retrieval without embedding 5,000 pages again.

A page's section path reaches retrieval through the catalog (the ranker's ``section`` feature) and the
BM25 text (headings first, :func:`mmrag.spaces.bm25.bm25_text`); the dense text vectors do not read it
(``chunk_context`` is empty by default: the tool refuses a corpus that embeds sections). For every PDF
document of the corpus this reads the file again (by its file name under ``--pdfs``), computes the
paths the current :mod:`mmrag.ingest.page_context` gives when read from the first page (what ingestion's
batches give: :func:`bench.section_paths.batch_paths`), writes them to the catalog, records the
documents' BM25 lengths again and rewrites every page's BM25 vector (:func:`mmrag.jobs.bm25_stats.reweight`).
Page payloads keep the ``section`` they were written with (shown with a hit; no ranking reads it).
``--rules REF`` uses the page_context of a git ref instead, read the way that version's ingestion read it
(its batches and look-back): run it on a second copy, so both arms of a comparison went through the same
rewrite and differ only in the rules.

    cp -a /work/data/filings /work/data/filings-sections
    python -m bench.rewrite_sections --data-dir /work/data/filings-sections --corpus eval-filings \\
        --pdfs ../shared/corpus/filings/pdf [--rules 7950f50]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path

import pymupdf

from bench._suite_data import open_search_pipeline
from bench.section_paths import baseline_module, batch_paths
from mmrag.ingest import page_context
from mmrag.jobs.bm25_stats import backfill, reweight


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a copy of an ingested data folder (rewritten)")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--pdfs", type=Path, nargs="+", required=True, help="folders holding the corpus's files")
    ap.add_argument("--rules", default=None, help="git ref of the page_context to use (default: this checkout's)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rules = baseline_module(args.rules) if args.rules else page_context
    settings, pipe = open_search_pipeline(args.data_dir)
    try:
        if pipe.catalog.corpora.config(args.corpus).chunk_context:
            raise SystemExit(f"{args.corpus} embeds section headings in its text vectors: ingest it again instead")
        db = sqlite3.connect(args.data_dir / "catalog.sqlite3")
        documents = db.execute("SELECT id, filename FROM documents WHERE corpus = ? AND media_type = ?",
                               (args.corpus, "application/pdf")).fetchall()
        changed = pages = 0
        for doc_id, filename in documents:
            path = next((d / filename for d in args.pdfs if (d / filename).exists()), None)
            if path is None:
                raise SystemExit(f"{filename}: not under {[str(d) for d in args.pdfs]}")
            with pymupdf.open(path) as pdf:
                paths = batch_paths(rules, pdf, settings.jobs.batch_pages, settings.jobs.parse_ahead)
            for page_id, number, context in db.execute(
                    "SELECT id, number, context FROM pages WHERE corpus = ? AND document_id = ?", (args.corpus, doc_id)
            ).fetchall():
                new = json.dumps(paths.get(number, []))
                changed += new != context
                pages += 1
                db.execute("UPDATE pages SET context = ?, traits = NULL WHERE corpus = ? AND id = ?",  # traits: of the
                           (new, args.corpus, page_id))  # section path too (read from the text when searched)
            db.execute("DELETE FROM bm25_lengths WHERE corpus = ? AND document_id = ?", (args.corpus, doc_id))
        db.commit()
        db.close()
        backfill(pipe.catalog, args.corpus)
        result = reweight(pipe.catalog, pipe.store, args.corpus, None)
    finally:
        pipe.close()
    print(f"{args.corpus}: {len(documents)} documents, {pages} pages, {changed} section paths changed; "
          f"BM25 rewritten for {result.pages} pages (average length {result.avg_len:.1f}) "
          f"in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
