"""The scale benchmark's corpus (bench/scale.py): a real ingest, grown by distinct copies of its documents.

What is real and what is synthetic:

* the **base** is a real ingest (PDFs parsed, embedded and written by the product's job, product defaults),
  copied as it is into the benchmark's data folder: copy 0 of every document is the real document;
* a **copy** keeps its base document's pages as the catalog stored them (text, words, section paths), but is
  a distinct document: its own id (so its own page and point ids), its company and period facts perturbed
  (:func:`perturb`: every entity and ticker of its facts replaced by a made-up company, every year in its
  facts and file name shifted), so the document stage sees distinct documents;
* a copy's page vectors are the real model's vectors of the real text (read back from the base's store),
  dense and multi-vectors with Gaussian noise added (:data:`NOISE` per component, cosine ~0.99 to the
  original) so that HNSW indexes distinct points; BM25 vectors are the real ones (the text is the same);
  the document space's vectors are computed by the real model from the copy's perturbed facts;
* a copy keeps its base document's PDF in the page store, as an ingested document does.

Copies are written with the functions the job writer writes a document with
(:mod:`mmrag.jobs.writer`: ``catalog.pages.save_images``, ``store.upsert``, ``bm25_stats.record_document``,
``catalog.documents.add``) and each growth step ends as a job does: ``bm25_stats.maybe_reweight`` then
``store.optimize``.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.ingest.doc_evidence import metadata_evidence
from mmrag.ingest.ids import page_id, point_id, sha256_hex
from mmrag.jobs import bm25_stats
from mmrag.jobs.embedding import page_payload
from mmrag.jobs.writer import add_document
from mmrag.page_render import RenderSpec
from mmrag.pipeline import Pipeline
from mmrag.store.base import FilterSpec, PointRecord, SparseVec, VectorValue
from mmrag.types import Document, DocumentInfo, Page

NOISE = 0.005  # per component of a unit vector of 384 dims: the noise's norm is ~0.1, cosine to the original ~0.995
DOCUMENT_VECTORS = ("doc_text", "doc_bm25")  # computed for each copy from its own (perturbed) facts
_FIRST = ("Altor", "Brevan", "Cobalt", "Dunmore", "Elmridge", "Fenwick", "Galloway", "Harrowgate", "Ivel",
          "Jarrow", "Kestrel", "Lomond", "Marlow", "Norcross", "Oakhurst", "Pennant", "Quarry", "Rushmere")
_SECOND = ("Systems", "Holdings", "Industries", "Networks", "Devices", "Labs", "Energy", "Foods", "Motors",
           "Logistics", "Media", "Materials")
YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")


@dataclass(frozen=True, slots=True)
class BaseDocument:
    """One document of the real ingest: its row, its stored pages, its points' vectors, its kept PDF."""

    info: DocumentInfo
    pages: list[Page]
    vectors: dict[str, dict[str, VectorValue]]  # page id -> its stored vectors
    source: tuple[bytes | None, RenderSpec | None]


def copy_data_folder(base: Path, data_dir: Path) -> None:
    """The benchmark's data folder starts as a copy of the real ingest (closed: nothing else has it open),
    without its job state and spool: an ingest stopped part way is not resumed (:func:`drop_unlisted`)."""
    if data_dir.exists():
        shutil.rmtree(data_dir)
    shutil.copytree(base, data_dir, ignore=shutil.ignore_patterns("owner.lock", "spool", "jobs.sqlite3*"))


def drop_unlisted(pipeline: Pipeline, corpus: str) -> int:
    """Delete the points of documents the catalog does not list (the files an ingest stopped part way had not
    finished: the base is the documents it completed); returns how many documents."""
    listed = {d.id for d in pipeline.catalog.documents.listed(corpus, limit=1_000_000)}
    found = {h.payload["document_id"] for h in pipeline.store.scroll(corpus, limit=1_000_000)}
    unlisted = sorted(found - listed)
    if unlisted:
        pipeline.store.delete(corpus, FilterSpec(match={"document_id": unlisted}))
    return len(unlisted)


def vector_names(pipeline: Pipeline, corpus: str) -> list[str]:
    """The named vectors of a corpus's collection (its spaces' specs)."""
    spaces = pipeline.retriever.corpus_spaces(pipeline.catalog.corpora.config(corpus))
    return [spec.name for name in pipeline.catalog.corpora.config(corpus).spaces if name in spaces
            for spec in spaces[name].specs()]


def _value(v: Any) -> VectorValue:
    if hasattr(v, "indices"):
        return SparseVec(indices=list(v.indices), values=list(v.values))
    return np.asarray(v, dtype=np.float32)


def load_base(pipeline: Pipeline, corpus: str) -> list[BaseDocument]:
    """Every document of ``corpus`` with its pages, vectors and kept PDF (held in memory: ~1,000 pages)."""
    catalog, names = pipeline.catalog, vector_names(pipeline, corpus)
    sources = catalog.corpora.folder(corpus) / "sources"
    out = []
    for info in catalog.documents.listed(corpus, limit=1_000_000):
        pages = catalog.pages.stored(corpus, info.id)
        hits = pipeline.store.scroll(corpus, FilterSpec(match={"document_id": info.id}), limit=len(pages) + 1,
                                     with_vectors=names)
        vectors = {h.payload["page_id"]: {k: _value(v) for k, v in h.vectors.items()} for h in hits}
        pdf, spec = sources / f"{info.id}.pdf", sources / f"{info.id}.json"
        source = (pdf.read_bytes(), RenderSpec(**json.loads(spec.read_text()))) if pdf.exists() else (None, None)
        out.append(BaseDocument(info, pages, vectors, source))
    return out


def company(k: int) -> tuple[str, str]:
    """The made-up company of copy ``k`` and its ticker (distinct for every k)."""
    first, rest = _FIRST[k % len(_FIRST)], k // len(_FIRST)
    name = f"{first} {_SECOND[rest % len(_SECOND)]}" + (f" {rest // len(_SECOND) + 1}" if rest >= len(_SECOND) else "")
    return name, f"{first[:3].upper()}{k}"


def perturb(metadata: dict[str, Any], filename: str, k: int) -> tuple[dict[str, Any], str]:
    """Copy ``k``'s metadata and file name: its facts' entities and tickers replaced by copy k's company,
    every year shifted back by 1 + k % 25 (in the facts and the file name)."""
    found = metadata.get("doc")
    facts: dict[str, Any] = found if isinstance(found, dict) else {}
    name, ticker = company(k)
    swaps = [(e, name) for e in facts.get("entities") or [] if e] + \
        [(t, ticker) for t in facts.get("tickers") or [] if t]
    shift = 1 + k % 25

    def text(s: str) -> str:
        for old, new in sorted(swaps, key=lambda x: -len(x[0])):
            s = s.replace(old, new)
        return YEAR.sub(lambda m: str(int(m.group()) - shift), s)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {key: walk(x) for key, x in v.items()}
        return v

    stem, dot, ext = filename.rpartition(".")
    return walk(metadata), (f"{text(stem)} ({name}).{ext}" if dot else f"{text(filename)} ({name})")


def noisy(value: VectorValue, rng: np.random.Generator) -> VectorValue:
    """A dense or multi-vector with Gaussian noise, rows renormalised; sparse vectors unchanged."""
    if isinstance(value, SparseVec):
        return value
    v = np.asarray(value, dtype=np.float32)
    v = v + rng.normal(0.0, NOISE, v.shape).astype(np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def copy_id(base_id: str, k: int) -> str:
    """The document id of copy ``k`` of document ``base_id`` (copy 0: the document itself)."""
    return base_id if k == 0 else sha256_hex(f"bench-scale copy {k} of {base_id}".encode())[:32]


def originals(base: list[BaseDocument], copies_made: int) -> dict[str, str]:
    """Document id -> the id of the real document it copies, for copies ``0..copies_made``."""
    return {copy_id(b.info.id, k): b.info.id for b in base for k in range(copies_made + 1)}


def copy_document(base: BaseDocument, k: int, rng: np.random.Generator,
                  document_vectors: dict[str, VectorValue]) -> tuple[Document, list[PointRecord]]:
    """Copy ``k`` of ``base``: the document (pages re-identified) and its points."""
    doc_id = copy_id(base.info.id, k)
    metadata, filename = perturb(base.info.metadata, base.info.filename, k)
    pages = [replace(p, id=page_id(doc_id, p.number), document_id=doc_id, image_png=None) for p in base.pages]
    doc = Document(id=doc_id, filename=filename, media_type=base.info.media_type, size_bytes=base.info.size_bytes,
                   metadata=metadata, pages=pages)
    points = []
    for old, new in zip(base.pages, pages, strict=True):
        stored = base.vectors.get(old.id, {})
        vectors = {name: noisy(v, rng) for name, v in stored.items() if name not in DOCUMENT_VECTORS}
        vectors.update({name: v for name, v in document_vectors.items() if name in stored})
        points.append(PointRecord(point_id(new.id), vectors, page_payload(doc, new.number, new.id, new.context)))
    return doc, points


def corpus_pages(pipeline: Pipeline, corpus: str) -> int:
    return pipeline.store.count(corpus)


def copies(base: list[BaseDocument], first: int = 1) -> Iterator[tuple[int, BaseDocument]]:
    """Copy numbers and the documents they copy, in order, endlessly (copy 0 is the real ingest itself)."""
    k = first
    while True:
        for doc in base:
            yield k, doc
        k += 1


def grow(pipeline: Pipeline, corpus: str, todo_copies: Iterator[tuple[int, BaseDocument]], target_pages: int,
         rng: np.random.Generator, batch_docs: int = 32) -> dict[str, float]:
    """Add the next copies of :func:`copies` until ``corpus`` has at least ``target_pages`` pages, then end as a
    job ends (re-weight if BM25's average drifted, optimise); returns the documents added and the seconds of
    the writes, the re-weight (0 when the average had not drifted) and the optimisation."""
    catalog, store = pipeline.catalog, pipeline.store
    space = pipeline.retriever.corpus_spaces(catalog.corpora.config(corpus)).get("document")
    pages = corpus_pages(pipeline, corpus)
    added = 0
    t0 = time.perf_counter()
    embedded_with = bm25_stats.indexing_config(catalog, corpus, catalog.corpora.config(corpus))
    while pages < target_pages:
        todo: list[tuple[int, BaseDocument]] = []
        while pages + sum(len(d.pages) for _, d in todo) < target_pages and len(todo) < batch_docs:
            todo.append(next(todo_copies))
        evidence = [metadata_evidence(*perturb(d.info.metadata, d.info.filename, k)) for k, d in todo]
        doc_vectors = space.evidence_vectors(evidence) if space is not None else [{} for _ in todo]  # type: ignore[attr-defined]
        for (k, b), dv in zip(todo, doc_vectors, strict=True):
            doc, points = copy_document(b, k, rng, dv)
            catalog.pages.save_images(corpus, doc.pages, *b.source)  # as JobWriter._write
            store.upsert(corpus, points)
            bm25_stats.record_document(catalog, store, corpus, doc, embedded_with)  # as JobWriter._maybe_finish_file
            add_document(catalog, corpus, doc)  # as JobWriter._maybe_finish_file
            pages += len(doc.pages)
            added += 1
    t1 = time.perf_counter()
    reweighted = bm25_stats.maybe_reweight(catalog, store, corpus)  # as JobWriter._maybe_finish_job
    t2 = time.perf_counter()
    store.optimize(corpus)
    return {"documents": added, "write_s": t1 - t0, "reweight_s": 0.0 if reweighted is None else t2 - t1,
            "optimize_s": time.perf_counter() - t2}
