"""Corpus management: create (with the spaces available here), list, delete, maintain (BM25 re-weighting,
documents' evidence re-derived), and the models corpora use.

Lifecycle: one :class:`Corpora` per process, built by :func:`mmrag.pipeline.build_pipeline` over the
pipeline's catalog, store, spaces and embedders; thread-safe as far as the catalog and store are.
Documents are deleted through the job writer, which owns every write to a corpus's rows and vectors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mmrag.catalog import Catalog
from mmrag.catalog.corpora import CorpusRow, check_corpus_name
from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.embed.lazy import LazyEmbedder, one_line, usable
from mmrag.errors import Conflict, InvalidInput
from mmrag.jobs.writer import JobWriter
from mmrag.spaces import Space
from mmrag.spaces.registry import space_names
from mmrag.store import CollectionSpec, VectorStore

if TYPE_CHECKING:
    from mmrag.jobs.bm25_stats import Reweight
    from mmrag.jobs.doc_reindex import Reindex

log = logging.getLogger(__name__)


@dataclass
class Corpora:
    """Creates and deletes corpora: a catalog row and a store collection shaped by the corpus's spaces."""

    catalog: Catalog
    store: VectorStore
    spaces: dict[str, Space]
    embedders: dict[str, Embedder]  # space name -> embedder (lazy: a model loads on first need)
    unavailable: dict[str, str]  # space -> why it is off (shared with the pipeline; filled as models fail)
    writer: JobWriter  # deletes documents (the single writer of a corpus's rows and vectors)

    def config(self, name: str) -> CorpusConfig:
        """The corpus's config; NotFound (saying how to create it) for an unknown corpus."""
        return self.catalog.corpora.config(name)

    def exists(self, name: str) -> bool:
        return self.catalog.corpora.exists(name)

    def listed(self) -> list[CorpusRow]:
        return self.catalog.corpora.listed()

    def summary(self, name: str) -> CorpusRow:
        """The corpus with what it holds; NotFound for an unknown corpus."""
        return self.catalog.corpora.summary(name)

    def folder(self, name: str) -> Path:
        """Where the corpus's files are (kept PDFs, page images, its own ranker model)."""
        return self.catalog.corpora.folder(name)

    def collection_spec(self, config: CorpusConfig) -> CollectionSpec:
        return CollectionSpec(spaces=tuple(s for name in config.spaces
                                           for s in self.spaces[name].for_corpus(config).specs()))

    def create_corpus(self, name: str, config: CorpusConfig | None = None) -> CorpusConfig:
        """Create a corpus with the requested spaces that are available here."""
        check_corpus_name(name)
        config = (config or CorpusConfig()).model_copy()
        unknown = [s for s in config.spaces if s not in space_names()]
        if unknown:
            raise InvalidInput(f"unknown spaces {unknown}; allowed: {list(space_names())}")
        asked = list(config.spaces)
        config.spaces = self._available(name, config.spaces)
        if not config.spaces:  # a well-formed request this server cannot serve now: 409, never the hub's text
            usable_here = [s for s in self.spaces if s not in self.unavailable]
            raise Conflict(f"none of the requested spaces can be used on this server: "
                           f"{'; '.join(f'{s}: {self.why_off(s)}' for s in asked)}; spaces available here: "
                           f"{usable_here} (details: GET /health)",
                           detail={"reason": "space_unavailable", "spaces": {s: self.why_off(s) for s in asked},
                                   "available": usable_here})
        for space, embedder in self.embedders.items():
            if space in config.spaces:
                setattr(config, f"{space}_model", embedder.spec)
        if "text" in config.spaces:
            config.text_precision = self.embedders["text"].precision  # type: ignore[assignment]
            config.text_kernels = self.embedders["text"].kernels
        if self.exists(name):
            raise Conflict(f"corpus {name!r} already exists")
        self.store.create_collection(name, self.collection_spec(config))
        self.catalog.corpora.create(name, config)
        return config

    def why_off(self, space: str) -> str:
        """One line of ours saying why ``space`` cannot be used here (never a model hub's own text)."""
        reason = self.unavailable.get(space, "")
        if reason == "disabled in configuration":
            return "disabled in this server's configuration"
        embedder = self.embedders.get(space)
        if embedder is not None:
            return f"its model {embedder.spec!r} could not be loaded on this server"
        return "not configured on this server"

    def _available(self, name: str, spaces: list[str]) -> list[str]:
        """The requested spaces that are on here; a space with a model is on when its model loads (now,
        on first need: its dim shapes the collection). Dropped ones are logged with their reason."""
        dropped = [s for s in spaces if s not in self.spaces or (s in self.embedders
                                                                 and not usable(self.embedders[s]))]
        if dropped:
            log.warning("corpus %s: created without spaces %s (%s)", name, dropped,
                        "; ".join(f"{s}: {one_line(self.unavailable.get(s, 'not configured'), 100)}"
                                  for s in dropped))
        return [s for s in spaces if s not in dropped]

    def ensure_corpus(self, name: str, config: CorpusConfig | None = None) -> CorpusConfig:
        """The corpus's config, creating the corpus first if it does not exist (safe under a race)."""
        if self.exists(name):
            return self.config(name)
        try:
            return self.create_corpus(name, config)
        except Conflict:
            return self.config(name)

    def delete_corpus(self, name: str) -> None:
        self.config(name)
        self.store.delete_collection(name)
        self.catalog.corpora.delete(name)

    def delete_document(self, corpus: str, doc_id: str) -> None:
        self.writer.delete_document(corpus, doc_id)

    def optimize(self, corpus: str) -> None:
        """Build the corpus's indexes and quantised vectors now (the job writer does so after each job)."""
        self.config(corpus)
        self.store.optimize(corpus)

    def reweight_bm25(self, corpus: str) -> Reweight:
        """Rewrite the corpus's BM25 vectors with its average page length (:func:`mmrag.jobs.bm25_stats.reweight`)."""
        from mmrag.jobs.bm25_stats import reweight

        return reweight(self.catalog, self.store, corpus)

    def reindex_documents(self, corpus: str) -> Reindex:
        """Re-derive the evidence of every document of the corpus (:mod:`mmrag.jobs.doc_reindex`)."""
        from mmrag.jobs.doc_reindex import reindex_documents  # the evidence rules: loaded when asked

        return reindex_documents(self.catalog, self.store, self.spaces, corpus)

    def warm_up(self) -> None:
        """Load the models that the served corpora use (and the text model, which every corpus needs) now
        rather than on the first request: the API calls this on a background thread at start-up. Models no
        corpus uses stay unloaded; failures land in ``unavailable`` as they would on first use."""
        for space in sorted(self.served_models()):
            usable(self.embedders[space])
        for row in self.listed():
            for note in self.model_notes(row.config):
                log.warning("corpus %r: %s", row.name, note)

    def model_notes(self, config: CorpusConfig) -> list[str]:
        """Where this server's text model differs from the one that embedded a corpus (its recorded spec and
        precision): its searches still work, with query vectors close to but not equal to the stored ones.
        Reads a loaded text model only (nothing loads here)."""
        text = self.embedders.get("text")
        if "text" not in config.spaces or text is None or (isinstance(text, LazyEmbedder) and text.state != "loaded"):
            return []
        notes = []
        if config.text_model and config.text_model != text.spec:
            notes.append(f"its text vectors come from {config.text_model!r}, this server embeds queries with "
                         f"{text.spec!r}; re-ingest the corpus, or set MMRAG_EMBED__TEXT_MODEL={config.text_model}")
        stored = config.text_precision or "float32"  # corpora created before the record were float32
        if text.precision is not None and stored != text.precision:
            notes.append(f"its text vectors were computed in {stored}, this server embeds queries in "
                         f"{text.precision} (close: median cosine 0.99, not equal); re-ingest the corpus, or set "
                         f"MMRAG_EMBED__TEXT_PRECISION={stored}")
        elif config.text_kernels and text.kernels and config.text_kernels != text.kernels:
            notes.append(f"its text vectors were computed with {config.text_kernels} kernels, this server "
                         f"embeds queries with {text.kernels} (another kind of CPU): exact kernels of one precision "
                         f"agree to float rounding, an inexact one (int8/u8s8 without VNNI) does not; re-ingest "
                         f"the corpus if its searches look worse here")
        return notes

    def served_models(self) -> set[str]:
        """The spaces whose model :meth:`warm_up` loads: the text model and those the corpora use."""
        wanted = {"text"}
        for row in self.listed():
            wanted.update(row.config.spaces)
        return wanted & set(self.embedders)
