"""What the first search after an upload pays for the corpus's documents (issue 41): the document prior's
:class:`~mmrag.retrieve.document_prior.DocumentsCache` refreshed after one document is added to a corpus of N.

Two arms, their order alternated over rounds (ABBA), one new document added before each round:

* ``full``: a fresh cache (what a process does at its first search, and what every upload cost before the
  refresh was made incremental): every document's facts read from the catalog, every organisation's aliases
  compiled (the names cache cleared first, as before it existed);
* ``incremental``: the cache that served the previous round, refreshed: the new document's facts read, the
  compiled aliases of the others reused (:meth:`DocumentsCache.get`).

The documents are real facts copied the way ``bench.scale`` grows its corpus: the facts of a data folder's
corpus (``--data-dir``, ``--corpus``: an ingest of filings, e.g. ``mmrag eval run eval/suites/sec-10q``), each copy
a made-up company with its years shifted (``bench._scale_corpus.perturb``), written to a fresh catalog in a
temporary folder (no vectors: the catalog is all this reads). It ends with
``RESULT full_s incremental_s ratio documents`` (medians over rounds, 95 % bootstrap intervals; ``ratio``:
incremental / full, paired by round)::

    python -m bench.doc_refresh --data-dir DIR --corpus eval-sec-10q --documents 4823 --rounds 9
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench._scale_corpus import perturb
from bench._stats import machine_line, result_line
from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.retrieve.document_prior import DocumentsCache, entity_core
from mmrag.types import Document


def base_metadata(data_dir: Path, corpus: str) -> list[tuple[str, str, dict[str, object]]]:
    """(id, file name, metadata) of every document of ``corpus`` in the data folder's catalog."""
    catalog = Catalog(data_dir)
    docs = catalog.documents.listed(corpus, limit=100_000)
    if not docs:
        raise SystemExit(f"corpus {corpus!r} in {data_dir} has no documents")
    return [(d.id, d.filename, d.metadata) for d in docs]


def copy_of(base: list[tuple[str, str, dict[str, object]]], k: int) -> Document:
    doc_id, filename, metadata = base[k % len(base)]
    meta, name = perturb(metadata, filename, k) if k >= len(base) else (metadata, filename)  # perturb copies
    return Document(id=f"{doc_id[:24]}{k:08x}", filename=name, media_type="application/pdf", size_bytes=1, pages=[],
                    metadata=meta)


def run(data_dir: Path, corpus: str, documents: int, rounds: int) -> dict[str, object]:
    base = base_metadata(data_dir, corpus)
    with tempfile.TemporaryDirectory(prefix="doc-refresh-") as tmp:
        catalog = Catalog(Path(tmp))
        catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
        t0 = time.perf_counter()
        for k in range(documents):
            catalog.documents.add("c", copy_of(base, k))
        print(f"{documents} documents ({len(base)} base) written in {time.perf_counter() - t0:.1f} s")
        warm = DocumentsCache(catalog)
        warm.get("c")
        added = [documents]

        def add_one() -> None:
            catalog.documents.add("c", copy_of(base, added[0]))
            added[0] += 1

        def full(_: int) -> float:
            entity_core.cache_clear()
            t = time.perf_counter()
            DocumentsCache(catalog).get("c")
            return time.perf_counter() - t

        def incremental(_: int) -> float:
            t = time.perf_counter()
            warm.get("c")
            return time.perf_counter() - t

        arms = {"full": full, "incremental": incremental}
        times: dict[str, list[float]] = {"full": [], "incremental": []}
        for r in range(rounds):
            add_one()  # the upload: both arms see the same new document
            for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:  # ABBA
                times[name].append(arms[name](r))
            print(f"round {r + 1}/{rounds}: {added[0]} documents | full {times['full'][-1] * 1000:.0f} ms | "
                  f"incremental {times['incremental'][-1] * 1000:.0f} ms")
    return {"full_s": interval(times["full"]), "incremental_s": interval(times["incremental"]),
            "ratio": interval(paired_ratios(times["incremental"], times["full"])), "documents": documents}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="a data folder holding --corpus (read only)")
    ap.add_argument("--corpus", required=True, help="the corpus whose documents' facts are copied")
    ap.add_argument("--documents", type=int, default=4823, help="documents in the corpus before the first upload "
                    "(4,823: bench.scale's 250,000 pages)")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    values = run(args.data_dir, args.corpus, args.documents, args.rounds)
    print(machine_line())
    print(result_line(values))


if __name__ == "__main__":
    main()
