"""The application in this process, over the parts the composition root built (:mod:`mmrag.application`).

Lifecycle: one per process over its pipeline (the API builds it at start-up, a CLI command when no server
owns the data folder); ``as_principal`` makes a cheap view per request; ``close`` (of the owner's instance,
``owns_pipeline``) closes the pipeline. It checks each request's corpus against the principal, then calls
the stage that does the work; the checks of a request's own fields are the stages' (one check per rule).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrag.access import EVERYONE, Principal
from mmrag.application import AnswerRequest, IngestProgress, Refused, Uploaded, page_links
from mmrag.errors import Conflict, InvalidInput, error_for_code
from mmrag.generate.answer_events import AnswerEvent
from mmrag.keys import Scope
from mmrag.types import DocumentInfo, SearchRequest, SearchResult

if TYPE_CHECKING:
    from mmrag.catalog.corpora import CorpusRow
    from mmrag.jobs.model import JobStatus
    from mmrag.pipeline import Pipeline


def corpus_json(row: CorpusRow) -> dict[str, Any]:
    """A corpus: the REST ``CorpusOut`` shape."""
    return {"name": row.name, "config": row.config.model_dump(), "documents": row.documents, "pages": row.pages,
            "created_at": row.created_at}


def document_json(info: DocumentInfo) -> dict[str, Any]:
    """A document: the REST ``DocumentOut`` shape (``status`` stored; an upload's answer says created or exists)."""
    return {"id": info.id, "filename": info.filename, "media_type": info.media_type, "size_bytes": info.size_bytes,
            "page_count": info.page_count, "metadata": info.metadata, "created_at": info.created_at,
            "status": "stored", "timings": {}}


class LocalApplication:
    """See the module docstring. ``answers``: whether this process serves answers (``can_answer``)."""

    def __init__(self, pipeline: Pipeline, principal: Principal = EVERYONE, *, answers: bool = True,
                 owns_pipeline: bool = True) -> None:
        self.pipeline = pipeline
        self.principal = principal
        self.can_answer = answers
        self.owns_pipeline = owns_pipeline
        self.description = "in-process"

    def as_principal(self, principal: Principal) -> LocalApplication:
        return LocalApplication(self.pipeline, principal, answers=self.can_answer, owns_pipeline=False)

    @property
    def _public_url(self) -> str:
        return self.pipeline.settings.api.public_url  # MMRAG_API__PUBLIC_URL: before the URLs it hands out

    def _read(self, corpus: str) -> None:
        self.principal.check("read", corpus, f"unknown corpus {corpus!r}")

    def health(self) -> dict[str, Any]:
        return self.pipeline.health()

    # corpora --------------------------------------------------------------------------
    def corpora(self) -> list[dict[str, Any]]:
        return [corpus_json(r) for r in self.pipeline.corpora.listed() if self.principal.sees(r.name)]

    def corpus(self, corpus: str) -> dict[str, Any]:
        self._read(corpus)
        return corpus_json(self.pipeline.corpora.summary(corpus))

    def create_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        from mmrag.config import CorpusConfig

        self.principal.check("admin", None, f"unknown corpus {corpus!r}")
        parsed = None if config is None else CorpusConfig.model_validate(config)
        if parsed is not None:  # a space named twice counts once
            parsed = parsed.model_copy(update={"spaces": list(dict.fromkeys(parsed.spaces))})
        self.pipeline.corpora.create_corpus(corpus, parsed)
        return corpus_json(self.pipeline.corpora.summary(corpus))

    def delete_corpus(self, corpus: str) -> None:
        self.principal.check("admin", corpus, f"unknown corpus {corpus!r}")
        self.pipeline.corpora.delete_corpus(corpus)

    def ensure_corpus(self, corpus: str, config: dict[str, Any] | None = None) -> None:
        if not self.principal.allows("admin", corpus):  # a key that may not create corpora: its own must exist
            self._read(corpus)
            self.pipeline.corpora.config(corpus)  # NotFound for an unknown corpus
            return
        if config:
            from mmrag.config import CorpusConfig

            self.pipeline.corpora.ensure_corpus(corpus, CorpusConfig.model_validate(config))
        else:
            self.pipeline.corpora.ensure_corpus(corpus)

    # uploads and jobs -----------------------------------------------------------------
    def upload(self, corpus: str, files: Sequence[tuple[str, bytes] | Refused],
               metadata: dict[str, Any]) -> Uploaded:
        from mmrag.jobs.uploads import Refusal, submit_uploads, upload_check

        self.principal.check("write", corpus, f"unknown corpus {corpus!r}")
        settings = self.pipeline.settings
        # converting in this process (no broker): a kind that needs an isolation this host cannot give is refused now
        check = upload_check(settings.ingest, isolation_up_front=settings.jobs.broker_url is None)
        items = [Refusal(f.filename, error_for_code(f.code, f.message)) if isinstance(f, Refused) else f
                 for f in files]
        submitted = submit_uploads(self.pipeline.runner, corpus, items, metadata, check)
        return Uploaded(submitted.job_id, [Refused(r.filename, r.code, r.message) for r in submitted.refused])

    def submit(self, corpus: str, paths: list[Path], metadata: dict[str, Any]) -> tuple[list[str], list[Refused]]:
        from mmrag.jobs.uploads import read_files

        uploaded = self.upload(corpus, list(read_files(paths)), metadata)
        return ([uploaded.job_id] if uploaded.job_id else []), uploaded.refused

    def _job(self, job_id: str, scope: Scope = "read") -> JobStatus:
        """The job, if the key may act with ``scope`` on its corpus; another tenant's job is unknown (404)."""
        status = self.pipeline.jobs.status(job_id)
        self.principal.check(scope, status.corpus, f"unknown job {job_id!r}")
        return status

    def job(self, job_id: str) -> dict[str, Any]:
        return self._job(job_id).summary(self._public_url)

    def jobs(self, corpus: str, limit: int = 100) -> list[dict[str, Any]]:
        self._read(corpus)
        self.pipeline.corpora.config(corpus)  # 404 for an unknown corpus
        return [j.summary(self._public_url) for j in self.pipeline.jobs.list_jobs(corpus, limit)]

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        self._job(job_id, "write")
        return self.pipeline.runner.cancel(job_id).summary(self._public_url)

    def prepare(self, corpus: str, files: Sequence[Path], progress: IngestProgress,
                config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Through the pipeline's blocking ingest: one job over every file (those indexed already are not redone)."""
        from mmrag.jobs.model import FINISHED_FILE

        with contextlib.suppress(Conflict):  # pipelines whose ensure_corpus is not idempotent
            self.ensure_corpus(corpus, config)
        self.principal.check("write", corpus, f"unknown corpus {corpus!r}")

        def on_job(job: JobStatus) -> None:
            progress(sum(f.state in FINISHED_FILE for f in job.files), len(files), "")

        docs = self.pipeline.ingest.files(corpus, list(files), {"source": "eval"}, on_job)
        progress(len(docs), len(files), "")
        return {"documents": len(docs), "pages": sum(d.page_count for d in docs)}

    # documents and pages --------------------------------------------------------------
    def documents(self, corpus: str, offset: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        self._read(corpus)
        return [document_json(d) for d in self.pipeline.documents.listed(corpus, offset=offset, limit=limit)]

    def document(self, corpus: str, document_id: str) -> dict[str, Any]:
        self._read(corpus)
        info = self.pipeline.documents.get(corpus, document_id)
        pages = []
        for p in self.pipeline.documents.pages(corpus, document_id):
            image, thumb = page_links(self._public_url, corpus, p.id)
            pages.append({"id": p.id, "number": p.number, "width": p.width, "height": p.height,
                          "text_source": p.text_source.value, "text_chars": p.text_chars, "image_url": image,
                          "thumbnail_url": thumb})
        return {**document_json(info), "pages": pages}

    def delete_document(self, corpus: str, document_id: str) -> None:
        self.principal.check("write", corpus, f"unknown corpus {corpus!r}")
        self.pipeline.corpora.delete_document(corpus, document_id)

    def page(self, corpus: str, page_id: str) -> dict[str, Any]:
        self._read(corpus)
        page = self.pipeline.documents.page(corpus, page_id)  # 404 for an unknown corpus or page
        info = page.info
        image, thumb = page_links(self._public_url, corpus, page_id)
        return {"id": info.id, "number": info.number, "width": info.width, "height": info.height,
                "text_source": info.text_source.value, "text_chars": info.text_chars, "image_url": image,
                "thumbnail_url": thumb, "document_id": info.document_id, "filename": page.filename,
                "section": list(info.context), "text": page.text,
                "words": [{"text": w.text, "box": list(w.bbox)} for w in page.words]}

    def page_image(self, corpus: str, page_id: str) -> bytes:
        self._read(corpus)
        return self.pipeline.documents.page_image(corpus, page_id)

    # search and answers ---------------------------------------------------------------
    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        """The pipeline's search; an image query is refused before its image is read when the corpus has no
        image space or the request uses none; an empty page range finds nothing (the rest checked as always)."""
        if request.image is not None or request.image_page_id is not None:
            self.check_image_query(corpus, request.spaces)
        self._read(corpus)
        if request.pages is not None and request.pages[1] < request.pages[0]:
            self.pipeline.check_search(corpus, replace(request, pages=None))  # 404 for an unknown corpus, ...
            return SearchResult([], {})
        return self.pipeline.search(corpus, request)

    def check_image_query(self, corpus: str, spaces: list[str] | None) -> None:
        self._read(corpus)
        self.pipeline.check_image_query(corpus, spaces)  # NotFound for an unknown corpus

    def answer(self, corpus: str, request: AnswerRequest) -> Iterator[AnswerEvent]:
        self._read(corpus)
        self.pipeline.corpora.config(corpus)  # 404 for an unknown corpus
        limit = self.pipeline.settings.retrieve.max_query_chars
        if len(request.question) > limit:
            raise InvalidInput(f"question is {len(request.question)} characters; the limit is {limit} "
                               "(MMRAG_RETRIEVE__MAX_QUERY_CHARS)")
        talk = request.conversation
        if talk is not None and talk.image is not None:
            self.check_image_query(corpus, talk.spaces)
        service = self.pipeline.answers.enable()  # the API enabled it at start-up; a command loads it now
        return service.answer_stream(corpus, request.question, request.top_k, request.visual_token_budget,
                                     request.max_new_tokens, document_ids=request.document_ids,
                                     temperature=request.temperature, conversation=talk)

    def close(self) -> None:
        if self.owns_pipeline:
            self.pipeline.close()
