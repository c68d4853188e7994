"""Text vectors stored as float16 (the default) or as Qdrant's TurboQuant codes (``CorpusConfig.text_datatype``
``turbo8`` / ``turbo4``): what the exhaustive search keeps, and the bytes on disk and in memory per page.

A corpus's collection (``--corpus`` in ``--data-dir``, e.g. the grown 50,000 pages of bench/scale.py) is copied
point by point into one collection per ``--datatypes`` value, the corpus's own spec with that ``text_datatype``
(the text space's chunks and ``doc_text``; the same payload, ids and other vectors), and optimised as a job
ends. Then, per query of ``--suite`` (the product's plan, ``Retriever.prepare``, every stage a full scan:
``QueryNode.exact``), the share of the original's top 10 that each copy returns (by point: the ids are the
same; and with ``--base`` by page contents, a copy of the page found in its place counting), for the default
plan and for the text space alone; the store's milliseconds for that full scan, every query once per collection
per round, the collections' order alternating (ABBA); and per collection, the bytes on disk by part and the bytes
resident after the queries (proportional set size of its files' mappings in this process: an engine maps each
file twice, so the plain RSS counts a page twice).

    python -m bench.store_datatype --data-dir /work/data-mem/exp50k [--corpus sec10q] [--datatypes turbo8,turbo4]
    python -m bench.store_datatype --data-dir DATA --corpus C --swap turbo8   # the corpus now uses its copy

``--swap`` makes the corpus use its copy (folders renamed, the catalog's config updated), so that suites run
on it (``mmrag eval run --data-dir``). Ends with ``RESULT recall10_<dt>=.. text_recall10_<dt>=.. ms_ratio_<dt>=..
disk_<dt>=.. resident_<dt>=..`` (milliseconds and bytes of the text vectors relative to the original's).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from pathlib import Path

from bench._scale_corpus import _value as stored_value
from bench._scale_corpus import copy_id
from bench._scale_measure import disk_by_vector, exact, resident_by_part
from bench._stats import machine_line, result_line
from bench.scale import search_settings
from mmrag.config import CorpusConfig
from mmrag.evaluate.stats import Estimate, ratio_interval
from mmrag.evaluate.suite import load_suite
from mmrag.pipeline import Pipeline, build_pipeline
from mmrag.store.base import FilterSpec, Hit, PointRecord
from mmrag.types import SearchRequest


def copy_collection(pipeline: Pipeline, corpus: str, target: str, config: CorpusConfig, batch: int = 20) -> int:
    """Every point of ``corpus`` written into a new collection ``target`` shaped by ``config``, then optimised;
    returns the points copied."""
    store, catalog = pipeline.store, pipeline.catalog
    store.create_collection(target, pipeline.corpora.collection_spec(config))
    names = [s.name for s in pipeline.corpora.collection_spec(config).spaces]
    documents = [d.id for d in catalog.documents.listed(corpus, limit=1_000_000)]
    copied = 0
    for i in range(0, len(documents), batch):
        hits = store.scroll(corpus, FilterSpec(match={"document_id": documents[i:i + batch]}), limit=1_000_000,
                            with_vectors=names)
        store.upsert(target, [PointRecord(h.id, {k: stored_value(v) for k, v in h.vectors.items()}, h.payload)
                              for h in hits])
        copied += len(hits)
    store.optimize(target)
    return copied


def swap(data_dir: Path, corpus: str, datatype: str) -> None:
    """The corpus uses its ``datatype`` copy: the folders trade places (the original kept as
    ``<corpus>.<its datatype>``) and the catalog's config records the datatype."""
    root = data_dir / "qdrant-edge"
    db = sqlite3.connect(data_dir / "catalog.sqlite3")
    (raw,) = db.execute("SELECT config FROM corpora WHERE name = ?", (corpus,)).fetchone()
    config = CorpusConfig.model_validate_json(raw)
    (root / corpus).rename(root / f"{corpus}.{config.text_datatype}")
    (root / f"{corpus}.{datatype}").rename(root / corpus)
    config.text_datatype = datatype  # type: ignore[assignment]
    db.execute("UPDATE corpora SET config = ? WHERE name = ?", (config.model_dump_json(), corpus))
    db.commit()
    db.close()


def recall(pipeline: Pipeline, corpus: str, targets: list[str], queries: list[str], spaces: list[str] | None,
           original: dict[str, str]) -> dict[str, tuple[list[float], list[float]]]:
    """Per target collection: per query, the share of ``corpus``'s exhaustive top 10 it returns exhaustively, by
    point and by page contents (``original``: a grown corpus's document id -> the real document it copies; a
    copy of the page found in its place counts, as in bench/scale.py)."""
    r = pipeline.retriever
    out: dict[str, tuple[list[float], list[float]]] = {t: ([], []) for t in targets}

    def content(h: Hit) -> tuple[str, int]:
        return original.get(h.payload["document_id"], h.payload["document_id"]), int(h.payload["page"])

    for q in queries:
        *_, node = r.prepare(corpus, SearchRequest(query=q, top_k=10, spaces=spaces))
        node.limit = 10
        full = exact(node)
        wanted = r.store.query(corpus, full, payload=["document_id", "page"])
        for t in targets:
            found = r.store.query(t, full, payload=["document_id", "page"])
            out[t][0].append(_share({h.id for h in found}, {h.id for h in wanted}))
            out[t][1].append(_share({content(h) for h in found}, {content(h) for h in wanted}))
    return out


def latencies(pipeline: Pipeline, names: list[str], queries: list[str], rounds: int) -> dict[str, list[float]]:
    """Milliseconds of the default plan's full scan per collection: every query once per collection per round,
    the collections' order alternating by query and round (ABBA)."""
    nodes = [exact(pipeline.retriever.prepare(names[0], SearchRequest(query=q))[-1]) for q in queries]
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for i, node in enumerate(nodes):
            for name in names if (r + i) % 2 == 0 else names[::-1]:
                t0 = time.perf_counter()
                pipeline.store.query(name, node, payload=[])
                out[name].append((time.perf_counter() - t0) * 1000)
    return out


def _share(found: set[object], wanted: set[object]) -> float:
    return len(found & wanted) / max(len(wanted), 1)


def originals(base: Path | None, copies: int = 1000) -> dict[str, str]:
    """Document id -> the real document it copies, for a corpus grown by bench/scale.py from ``base`` (its data
    folder); empty without one."""
    if base is None:
        return {}
    db = sqlite3.connect(base / "catalog.sqlite3")
    ids = [row[0] for row in db.execute("SELECT id FROM documents")]
    db.close()
    return {copy_id(b, k): b for b in ids for k in range(copies)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--corpus", default="sec10q")
    ap.add_argument("--datatypes", default="turbo8,turbo4")
    ap.add_argument("--suite", default="eval/suites/sec-10q", help="whose questions are the queries")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--base", type=Path, default=None,
                    help="the real ingest the corpus was grown from (bench/scale.py --base): recall by page contents")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--swap", default=None, help="make the corpus use this datatype's copy (made first if missing)")
    args = ap.parse_args()
    datatypes = [args.swap] if args.swap else [d for d in args.datatypes.split(",") if d]
    print(machine_line(), flush=True)
    pipeline = build_pipeline(search_settings(args.data_dir))
    root = args.data_dir / "qdrant-edge"
    try:
        config = pipeline.catalog.corpora.config(args.corpus)
        pages = pipeline.store.count(args.corpus)
        for dt in datatypes:
            target = f"{args.corpus}.{dt}"
            if not (root / target).exists():
                t0 = time.perf_counter()
                n = copy_collection(pipeline, args.corpus, target, config.model_copy(update={"text_datatype": dt}))
                print(f"{target}: {n:,} points copied and optimised in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.swap:
            pipeline.close()
            swap(args.data_dir, args.corpus, args.swap)
            print(f"{args.corpus} now uses its {args.swap} vectors")
            return
        queries = [q.text for q in load_suite(args.suite).queries][: args.queries]
        targets = [f"{args.corpus}.{dt}" for dt in datatypes]
        original = originals(args.base)
        plan = recall(pipeline, args.corpus, targets, queries, None, original)
        text = recall(pipeline, args.corpus, targets, queries, ["text"], original)
        ms = latencies(pipeline, [args.corpus, *targets], queries, args.rounds)
        resident = resident_by_part(root)
    finally:
        pipeline.close()
    values: dict[str, Estimate | float] = {"pages": pages}
    base_disk = disk_by_vector(root / args.corpus)
    for dt, t in zip(datatypes, targets, strict=True):
        disk = disk_by_vector(root / t)
        values[f"recall10_{dt}"] = statistics.mean(plan[t][0])
        values[f"recall10_{dt}_min"] = min(plan[t][0])
        values[f"recall10_content_{dt}"] = statistics.mean(plan[t][1])
        values[f"text_recall10_{dt}"] = statistics.mean(text[t][0])
        values[f"text_recall10_{dt}_min"] = min(text[t][0])
        values[f"text_recall10_content_{dt}"] = statistics.mean(text[t][1])
        values[f"ms_ratio_{dt}"] = ratio_interval(ms[t], ms[args.corpus])
        values[f"disk_{dt}"] = disk.get("vector_storage-text", 0) / max(base_disk.get("vector_storage-text", 1), 1)
        values[f"resident_{dt}"] = resident.get(f"{t}/vector_storage-text", 0) / max(
            resident.get(f"{args.corpus}/vector_storage-text", 1), 1)
    print(json.dumps({"disk_per_page": {name: {k: v / pages for k, v in disk_by_vector(root / name).items()}
                                        for name in [args.corpus, *targets]},
                      "resident_per_page": {k: v / pages for k, v in resident.items()}}, indent=1))
    print(machine_line())
    print(result_line(values))


if __name__ == "__main__":
    main()
