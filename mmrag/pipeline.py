"""The composition root: settings in, the wired stages out.

Shells (API, CLI, workers) call :func:`build_pipeline` at start-up, never at import.
Lifecycle: build once per process, use from many threads, ``close`` at exit (flushes the
store, releases the data-folder lock).
"""

from __future__ import annotations

import fcntl
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mmrag.catalog import Catalog, check_corpus_name
from mmrag.config import CorpusConfig, Settings
from mmrag.embed.base import Embedder, EmbedderOptions, load_embedder
from mmrag.errors import Conflict, MMRAGError, NotFound, Unavailable
from mmrag.indexing import Indexer, IngestOutcome

if TYPE_CHECKING:
    from mmrag.generate.answer import AnswerService
from mmrag.jobs.spool import Spool
from mmrag.jobs.stages import StageContext
from mmrag.jobs.state import JobStore
from mmrag.jobs.writer import JobWriter
from mmrag.retrieve import Retriever
from mmrag.spaces import Bm25Space, Space, TextDenseSpace
from mmrag.store import CollectionSpec, VectorStore, open_store
from mmrag.types import SPACES, DocumentInfo, SearchRequest, SearchResult

log = logging.getLogger(__name__)


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


class DataDirLock:
    """An exclusive lock on the data folder: the embedded store has one owner process."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "owner.lock"
        self._file: IO[str] | None = open(self.path, "a+")  # noqa: SIM115
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._file.seek(0)
            owner = self._file.read().strip() or "another process"
            self._file.close()
            self._file = None
            raise Conflict(f"data folder {data_dir} is in use by {owner}; stop it, or use its REST API "
                           "(the CLI does so automatically while `mmrag serve` runs)") from exc
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"pid {os.getpid()}")
        self._file.flush()

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


@dataclass
class Pipeline:
    settings: Settings
    catalog: Catalog
    store: VectorStore
    embedders: dict[str, Embedder]  # space name -> embedder
    spaces: dict[str, Space]
    indexer: Indexer
    retriever: Retriever
    unavailable: dict[str, str] = field(default_factory=dict)  # space -> why it is off
    lock: DataDirLock | None = None
    answerer: AnswerService | None = None  # retrieval + VLM (or extractive) answers
    jobs: JobStore | None = None  # job state (written only by this process: it owns the store)
    job_writer: JobWriter | None = None  # applies write/commit work of jobs

    # corpora -----------------------------------------------------------------
    def collection_spec(self, config: CorpusConfig) -> CollectionSpec:
        return CollectionSpec(spaces=tuple(s for name in config.spaces
                                           for s in self.spaces[name].for_corpus(config).specs()))

    def create_corpus(self, name: str, config: CorpusConfig | None = None) -> CorpusConfig:
        """Create a corpus with the requested spaces that are available here."""
        check_corpus_name(name)
        config = (config or CorpusConfig()).model_copy()
        unknown = [s for s in config.spaces if s not in SPACES]
        if unknown:
            from mmrag.errors import InvalidInput

            raise InvalidInput(f"unknown spaces {unknown}; allowed: {list(SPACES)}")
        dropped = [s for s in config.spaces if s not in self.spaces]
        if dropped:
            log.warning("corpus %s: spaces %s are not available here (%s)", name, dropped,
                        "; ".join(f"{s}: {self.unavailable.get(s, 'not configured')}" for s in dropped))
        config.spaces = [s for s in config.spaces if s in self.spaces]
        if not config.spaces:
            raise Unavailable(f"none of the requested spaces is available: {self.unavailable}")
        for space, embedder in self.embedders.items():
            setattr(config, f"{space}_model", embedder.spec)
        if self.catalog.has_corpus(name):
            raise Conflict(f"corpus {name!r} already exists")
        self.store.create_collection(name, self.collection_spec(config))
        self.catalog.create_corpus(name, config)
        return config

    def ensure_corpus(self, name: str, config: CorpusConfig | None = None) -> CorpusConfig:
        if self.catalog.has_corpus(name):
            return self.catalog.corpus_config(name)
        try:
            return self.create_corpus(name, config)
        except Conflict:
            return self.catalog.corpus_config(name)

    def delete_corpus(self, name: str) -> None:
        self.catalog.corpus_config(name)
        self.store.delete_collection(name)
        self.catalog.delete_corpus(name)

    # documents -----------------------------------------------------------------
    def ingest_bytes(self, corpus: str, data: bytes, filename: str,
                     metadata: dict[str, Any] | None = None) -> IngestOutcome:
        return self.indexer.ingest(corpus, data, filename, metadata)

    def ingest_path(self, corpus: str, path: str | Path, metadata: dict[str, Any] | None = None) -> DocumentInfo:
        p = Path(path)
        if not p.is_file():
            raise NotFound(f"no such file: {p}")
        return self.ingest_bytes(corpus, p.read_bytes(), p.name, metadata).document

    def optimize(self, corpus: str) -> None:
        """Build the corpus's indexes and quantised vectors now (the job writer does so after each job)."""
        self.catalog.corpus_config(corpus)
        self.store.optimize(corpus)

    def delete_document(self, corpus: str, doc_id: str) -> None:
        self.indexer.delete_document(corpus, doc_id)

    # search ------------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        return self.retriever.search(corpus, request)

    def health(self) -> dict[str, Any]:
        return {
            "spaces": {name: {"model": getattr(self.embedders.get(name), "spec", None)} for name in self.spaces},
            "unavailable": dict(self.unavailable),
            "store": "qdrant-server" if self.settings.store.url else f"embedded-{self.settings.store.engine}",
        }

    def stage_context(self) -> StageContext:
        """What the in-process job runner needs to run the worker stages (parse, embed) here."""
        assert self.job_writer is not None
        return StageContext(self.settings.ingest, self.job_writer.spool, self.settings.jobs.batch_pages, self.spaces)

    def load_page_image(self, corpus: str, page_id: str) -> bytes:
        """PNG bytes of a stored page (NotFound for an unknown page)."""
        self.catalog.page_info(corpus, page_id)
        path = self.catalog.page_image_path(corpus, page_id)
        if not path.exists():
            raise NotFound(f"image of page {page_id!r} is missing")
        return path.read_bytes()

    def enable_answers(self) -> AnswerService:
        """Build the answer service once (loads the VLM). When the configured VLM cannot be loaded the
        service still answers, extractively, and ``unavailable['vlm']`` says why."""
        if self.answerer is None:
            from mmrag.generate.answer import AnswerService

            try:
                self.answerer = AnswerService.from_config(self.search, self.load_page_image, self.settings.vlm)
            except (MMRAGError, OSError, ValueError, RuntimeError) as exc:
                self.unavailable["vlm"] = f"{self.settings.vlm.model}: {exc}"
                log.warning("VLM is OFF: %s; answers will be extractive", exc)
                vlm = self.settings.vlm
                self.answerer = AnswerService(self.search, self.load_page_image, None,
                                              default_visual_token_budget=vlm.visual_token_budget,
                                              max_tokens_per_image=vlm.max_visual_tokens_per_image,
                                              default_max_new_tokens=vlm.max_new_tokens)
            if self.settings.vlm.backend == "none":
                self.unavailable.setdefault("vlm", "disabled in configuration (vlm.backend = none)")
        return self.answerer

    def close(self) -> None:
        if self.answerer is not None and self.answerer.engine is not None:
            self.answerer.engine.close()
        self.store.close()
        self.catalog.close()
        if self.jobs is not None:
            self.jobs.close()
        if self.lock is not None:
            self.lock.release()


def _load_optional(space: str, spec: str | None, options: EmbedderOptions,
                   unavailable: dict[str, str]) -> Embedder | None:
    if not spec:
        unavailable[space] = "disabled in configuration"
        return None
    try:
        return load_embedder(spec, options)
    except (MMRAGError, OSError, ValueError, RuntimeError) as exc:
        unavailable[space] = f"{spec}: {exc}"
        log.warning("space %r is OFF: cannot load %s (%s); running without it", space, spec, exc)
        return None


def build_embedders(settings: Settings) -> tuple[dict[str, Embedder], dict[str, str]]:
    """The text embedder must load; visual ones are optional (their spaces turn off with a reason)."""
    options = EmbedderOptions(device=resolve_device(settings.embed.device))
    unavailable: dict[str, str] = {}
    if settings.embed.service_url:
        from mmrag.embed.client import RemoteEmbedder  # type: ignore[import-not-found,unused-ignore]

        url = settings.embed.service_url

        def remote(spec: str) -> Embedder:
            return RemoteEmbedder(url, spec, timeout_s=settings.embed.timeout_s)

        loader: Any = lambda space, spec: remote(spec) if spec else None  # noqa: E731
    else:
        loader = lambda space, spec: _load_optional(space, spec, options, unavailable)  # noqa: E731
    embedders: dict[str, Embedder] = {}
    text = load_embedder(settings.embed.text_model, options) if not settings.embed.service_url \
        else loader("text", settings.embed.text_model)
    embedders["text"] = text
    for space, spec in (("clip", settings.embed.clip_model), ("colpali", settings.embed.colpali_model)):
        embedder = loader(space, spec)
        if embedder is not None:
            embedders[space] = embedder
    return embedders, unavailable


def build_spaces(embedders: dict[str, Embedder]) -> dict[str, Space]:
    spaces: dict[str, Space] = {"text": TextDenseSpace(embedders["text"]), "bm25": Bm25Space()}
    try:
        from mmrag.spaces.visual import visual_spaces  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return spaces
    spaces.update(visual_spaces(embedders))
    return spaces


def build_pipeline(settings: Settings, *, embedders: dict[str, Embedder] | None = None,
                   lock: bool = True) -> Pipeline:
    """Wire the stages. ``embedders`` may be injected (tests); otherwise they load from settings."""
    data_dir = settings.data_dir
    owner = DataDirLock(data_dir) if lock and not settings.store.url else None
    try:
        unavailable: dict[str, str] = {}
        if embedders is None:
            embedders, unavailable = build_embedders(settings)
        spaces = build_spaces(embedders)
        catalog = Catalog(data_dir)
        store = open_store(settings.store, data_dir)
    except BaseException:
        if owner is not None:
            owner.release()
        raise
    indexer = Indexer(catalog, store, spaces, settings.ingest)
    retriever = Retriever(catalog, store, spaces, settings.retrieve, settings.ingest)
    jobs = JobStore(data_dir)
    writer = JobWriter(catalog, store, jobs, Spool(spool_dir(settings)))
    return Pipeline(settings, catalog, store, embedders, spaces, indexer, retriever, unavailable, owner,
                    jobs=jobs, job_writer=writer)


def spool_dir(settings: Settings) -> Path:
    """Where uploads and stage outputs are spooled (a volume shared with workers when distributed)."""
    return settings.jobs.spool_dir or settings.data_dir / "spool"
