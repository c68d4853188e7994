"""The composition root: settings in, the wired stages out.

Shells (API, CLI, workers) call :func:`build_pipeline` at start-up, never at import.
Lifecycle: build once per process, use from many threads, ``close`` at exit (flushes the
store, releases the data-folder lock).
"""

from __future__ import annotations

import fcntl
import functools
import gc
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mmrag.catalog import Catalog
from mmrag.config import Settings
from mmrag.corpora import Corpora
from mmrag.cpu_kernels import kernels_here
from mmrag.documents import Documents
from mmrag.embed.base import Embedder, EmbedderOptions, check_spec, load_embedder, register_backends
from mmrag.embed.lazy import LazyEmbedder, model_states, one_line
from mmrag.errors import Conflict, MMRAGError
from mmrag.generate.factory import check_vlm_backend
from mmrag.hub import go_offline_if_unreachable
from mmrag.jobs.blocking import BlockingIngest
from mmrag.jobs.page_renders import worker_renderer
from mmrag.jobs.parse_pool import ParsePool
from mmrag.jobs.runner import JobRunner, RunnerFactory, local_runner
from mmrag.jobs.spool import Spool
from mmrag.jobs.stages import StageContext
from mmrag.jobs.state import JobStore
from mmrag.jobs.writer import JobWriter
from mmrag.lazy_answers import Answers
from mmrag.retrieve import Retriever
from mmrag.spaces import Space
from mmrag.spaces.registry import build_spaces
from mmrag.store import VectorStore, open_store
from mmrag.types import SearchRequest, SearchResult

log = logging.getLogger(__name__)


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


WARM_UP_JOIN_S = 60.0
"""How long closing waits for the start-up warm-up (a model that is loading) before it closes the stores."""


@dataclass
class Pipeline:
    """Everything one process needs, wired by :func:`build_pipeline` (see docs/architecture.md)."""

    settings: Settings
    catalog: Catalog
    store: VectorStore
    embedders: dict[str, Embedder]  # space name -> embedder
    spaces: dict[str, Space]
    retriever: Retriever
    jobs: JobStore  # job state (written only by this process: it owns the store)
    job_writer: JobWriter  # the owner side of jobs: applies write/commit work, deletes documents
    runner: JobRunner  # runs ingestion jobs: embedded threads or Celery workers (every ingest goes here)
    corpora: Corpora  # create / list / delete / maintain corpora, warm up the models they use
    documents: Documents  # the stored documents and pages, as the shells read them
    answers: Answers  # retrieval + VLM (or extractive) answers, built on first enable()
    unavailable: dict[str, str]  # space (or "vlm") -> why it is off; shared with corpora and answers
    lock: DataDirLock | None = None
    _warming: threading.Thread | None = field(default=None, repr=False)
    _closing: threading.Event = field(default_factory=threading.Event, repr=False)

    # documents: every ingest is a job ---------------------------------------------------
    @functools.cached_property
    def ingest(self) -> BlockingIngest:
        """Blocking ingest through the runner: submit files as one job and wait (tests, benchmarks, evaluation)."""
        return BlockingIngest(self.runner, self.jobs, self.catalog, self.settings.ingest)

    # search ------------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        return self.retriever.search(corpus, request)

    def check_search(self, corpus: str, request: SearchRequest) -> None:
        """What :meth:`search` would refuse (unknown corpus, bounds, options), without searching."""
        self.retriever.validate(self.corpora.config(corpus), request)

    def check_image_query(self, corpus: str, spaces: list[str] | None) -> None:
        """Refuse an image query before its image is decoded unless a space of the request (default: the
        corpus's) takes image queries (NotFound for an unknown corpus)."""
        self.retriever.check_image_query(self.corpora.config(corpus), spaces)

    def warm_up(self) -> None:
        """Load now what the first searches would: the models the corpora use and their page rankers; then
        move everything loaded so far (libraries and models: ~0.5 M objects) out of the garbage collector's
        reach (``gc.freeze``), once per process. A full collection over them took ~360 ms and stalled about
        one search in 60 on a 5,000-page corpus (docs/benchmarks.md); what the process allocates later is
        collected as usual (frozen objects are still freed when their last reference goes)."""
        self.corpora.warm_up()
        for row in self.corpora.listed():
            if self._closing.is_set():  # closed meanwhile: the catalog is going
                return
            try:
                self.retriever.ranker_in_use(row.name)
            except MMRAGError as exc:  # the first search says so too: nothing more to do here
                log.warning("corpus %r: its page ranker cannot be loaded: %s", row.name, exc.message)
        if not gc.get_freeze_count():
            gc.collect()
            gc.freeze()

    def start_warm_up(self) -> None:
        """:meth:`warm_up` on a background thread (the server's start-up: the first search or upload does not
        stall); :meth:`close` waits for it, so it never reads a closed catalog."""
        self._warming = threading.Thread(target=self.warm_up, name="mmrag-warm-up", daemon=True)
        self._warming.start()

    def space_names(self) -> list[str]:
        """The spaces this process is configured with (whether or not their models load)."""
        return sorted(self.spaces)

    def image_spaces(self) -> list[str]:
        """Those of :meth:`space_names` that take image queries."""
        return [name for name in self.space_names() if self.spaces[name].takes_image_query]

    def check_store(self) -> None:
        """Raise unless the catalog and the vector store answer (readiness)."""
        names = [row.name for row in self.corpora.listed()]
        self.store.has_collection(names[0] if names else "mmrag-readiness-probe")

    def health(self) -> dict[str, Any]:
        """Which spaces can serve and why any is off; loads nothing (models load on first use).

        ``spaces``: the spaces whose model has not failed, with its state (loaded / not loaded);
        ``serving``: those that can serve: their model is loaded, or it is loading because the corpora use
        it; ``pending``: spaces whose model no corpus uses and that has not been tried yet (it loads when a
        corpus asks for it: until then nobody knows whether it can); ``off``: every space or model that
        cannot be used, with a one-line reason (``unavailable``: the full reason)."""
        models = model_states(self.embedders)
        served = self.corpora.served_models()
        state = {name: models.get(self._model_of(name), {"model": None, "state": "loaded"}) for name in self.spaces}
        on = {name: info for name, info in state.items() if info["state"] != "failed"}
        pending = [name for name, info in on.items()
                   if info["state"] == "not loaded" and self._model_of(name) not in served]
        return {
            "spaces": on,
            "serving": [name for name in on if name not in pending],
            "pending": pending,
            "off": {name: one_line(self.unavailable.get(self._model_of(name), "its model failed"), 160)
                    for name in [*self.unavailable, *(n for n in state if n not in on)]},
            "unavailable": dict(self.unavailable),
            "store": "qdrant-server" if self.settings.store.url else f"embedded-{self.settings.store.engine}",
            "text_kernels": self.text_kernels(),
        }

    def _model_of(self, name: str) -> str:
        """The model a space embeds with (its class's ``embedder_name``; the document space: ``text``); a
        name that is no space of this process (``vlm``, a space turned off) stands for itself."""
        space = self.spaces.get(name)
        return (space.embedder_name or name) if space is not None else name

    def text_kernels(self) -> dict[str, str]:
        """What the text model computes in, with which kernels, on which CPU and why (``/health``, ``mmrag
        config``); loads no model. With an embedding service: what the loaded model reported, if loaded."""
        if self.settings.embed.service_url:
            text = self.embedders.get("text")
            loaded = isinstance(text, LazyEmbedder) and text.state == "loaded"
            return {"where": "embedding service", "precision": str(text.precision) if loaded and text else "not loaded",
                    "kernels": str(text.kernels) if loaded and text else "not loaded",
                    "cpu": "the service's", "reason": "chosen on the embedding service's machine"}
        embed = self.settings.embed
        return {"where": "in-process", **kernels_here(embed.text_precision, embed.device).as_dict()}

    def stage_context(self) -> StageContext:
        """What a runner needs to run the worker stages (parse, embed) in this process."""
        return build_stage_context(self.settings, self.spaces)

    def close(self) -> None:
        """Stop the warm-up and the job runner (work in flight resumes at the next start) and the answers, then
        the stores."""
        self._closing.set()
        if self._warming is not None:
            self._warming.join(WARM_UP_JOIN_S)  # a model still loading ends within it, or is left (a daemon)
        self.runner.stop()
        self.answers.close()
        self.store.close()
        self.catalog.close()
        self.jobs.close()
        if self.lock is not None:
            self.lock.release()


def _lazy_model(space: str, spec: str, settings: Settings, unavailable: dict[str, str]) -> LazyEmbedder:
    """The model of one space, loaded on first use: in-process, or from the embedding service.
    A load failure turns the space off with its reason (``unavailable``) and one warning line."""
    url = settings.embed.service_url

    def load() -> Embedder:
        if url:
            from mmrag.embed.service_client import RemoteEmbedder

            return RemoteEmbedder(url, spec, timeout_s=settings.embed.timeout_s)
        go_offline_if_unreachable()
        return load_embedder(spec, EmbedderOptions(device=settings.embed.device,
                                                   text_precision=settings.embed.text_precision,
                                                   max_batch_tokens=settings.embed.max_batch_tokens))

    def failed(reason: str) -> None:
        unavailable[space] = f"{spec}: {reason}"
        log.warning("space %r is off: %s", space, one_line(reason))

    return LazyEmbedder(spec, load, failed, retry=bool(url))  # a service may come up later: ask again


def build_embedders(settings: Settings) -> tuple[dict[str, Embedder], dict[str, str]]:
    """One lazily loading embedder per configured space (nothing loads here; see mmrag.embed.lazy),
    and the spaces turned off by configuration. The text space's model is required: the corpora
    use it, and its failure is raised to whoever needs it. A spec whose backend is not registered is refused
    here (with an embedding service, the service's registry decides)."""
    register_backends(settings.embed.backends)
    unavailable: dict[str, str] = {}
    embedders: dict[str, Embedder] = {}
    specs = {"text": settings.embed.text_model, "clip": settings.embed.clip_model,
             "colpali": settings.embed.colpali_model}
    for space, spec in specs.items():
        if spec:
            if not settings.embed.service_url:
                check_spec(spec, f"MMRAG_EMBED__{space.upper()}_MODEL")
            embedders[space] = _lazy_model(space, spec, settings, unavailable)
        else:
            unavailable[space] = "disabled in configuration"
    return embedders, unavailable


def build_pipeline(settings: Settings, *, embedders: dict[str, Embedder] | None = None,
                   runner: RunnerFactory | None = None, run_jobs: bool = True, lock: bool = True) -> Pipeline:
    """Wire the stages: the one composition root of every shell (API, CLI, workers, evaluation).

    ``embedders`` may be passed (tests, a worker that built them); otherwise they load from settings.
    ``runner`` builds the job runner (default: the embedded :class:`~mmrag.jobs.runner.LocalRunner`;
    the API passes the Celery one when a broker is configured). With ``run_jobs`` the runner starts
    now (and resumes unfinished jobs); without, this process only reads jobs or applies writes."""
    check_vlm_backend(settings.vlm)
    data_dir = settings.data_dir
    owner = DataDirLock(data_dir) if lock and not settings.store.url else None
    try:
        unavailable: dict[str, str] = {}
        if embedders is None:
            embedders, unavailable = build_embedders(settings)
        spaces = build_spaces(embedders)
        parser = build_parse_pool(settings)  # ingestion's parse workers, which also render stored pages
        catalog = Catalog(data_dir, page_renderer=worker_renderer(parser, settings.ingest))
        store = open_store(settings.store, data_dir)
    except BaseException:
        if owner is not None:
            owner.release()
        raise
    retriever = Retriever(catalog, store, spaces, settings.retrieve, settings.ingest)
    jobs = JobStore(data_dir)
    writer = JobWriter(catalog, store, jobs, Spool(spool_dir(settings)), settings.jobs.plan_ahead)
    job_runner = (runner or local_runner)(writer, build_stage_context(settings, spaces, parser), settings)
    corpora = Corpora(catalog, store, spaces, embedders, unavailable, writer)
    answers = Answers(retriever.search, catalog.pages.image, settings.vlm, unavailable,
                      settings.retrieve.max_query_chars)
    pipeline = Pipeline(settings, catalog, store, embedders, spaces, retriever, jobs, writer, job_runner,
                        corpora, Documents(catalog), answers, unavailable, owner)
    if run_jobs:
        job_runner.start()
    return pipeline


def build_parse_pool(settings: Settings) -> ParsePool:
    """The parse worker processes of this process (started on first use)."""
    return ParsePool(settings.ingest.parse_memory_mb, settings.ingest.parse_workers_idle, settings.jobs.parse_nice,
                     settings.ingest.parse_worker_calls)


def build_stage_context(settings: Settings, spaces: dict[str, Space] | None,
                        parser: ParsePool | None = None) -> StageContext:
    """What the worker stages (plan, parse, embed) need; ``spaces`` None: this process does not embed;
    ``parser``: the parse pool this process already has (the service's, which renders pages too)."""
    return StageContext(settings.ingest, Spool(spool_dir(settings)), settings.jobs.batch_pages, spaces,
                        settings.jobs.parse_ahead, parser or build_parse_pool(settings))


def build_worker_context(settings: Settings, *, embeds: bool) -> StageContext:
    """The stage context of a worker process that does not own the store (``mmrag worker cpu|gpu``)."""
    spaces = build_spaces(build_embedders(settings)[0]) if embeds else None
    return build_stage_context(settings, spaces)


def spool_dir(settings: Settings) -> Path:
    """Where uploads and stage outputs are spooled (a volume shared with workers when distributed)."""
    return settings.jobs.spool_dir or settings.data_dir / "spool"
