"""Evaluation suites: a dataset, a pipeline configuration and metrics, from ``suite.yaml``.

A suite lives in a folder (``eval/suites/<name>/``) holding ``suite.yaml`` (or ``suite.json``) and the
dataset files it names. Dataset formats:

- ``pdf-qrels``: a folder of documents (PDFs, images) plus ``queries.jsonl`` and a qrels TSV whose doc
  ids are ``filename#page`` (basename, 1-based page).
- ``beir``: a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``); each corpus record
  is rendered to a one-document PDF named ``<_id>.pdf`` for ingest, and judged at document level.
- ``financebench``: FinanceBench's own question file (``queries``, relative to ``corpus``:
  ``financebench_id``, ``question``, ``doc_name``, ``evidence[].evidence_page_num`` 0-based) over
  a folder of its PDFs (``include``); judged like ``pdf-qrels`` with ``judge: document`` (each
  evidence page judges its document, and its page in ``page_metrics``). The questions stay where
  their authors' licence put them: nothing is copied into the suite.
- ``mmlongbench``: MMLongBench-Doc's question file (:mod:`.mmlongbench`): each question scoped to its own
  document and judged at page level.

A query may carry a scope (documents and/or a page range, :mod:`.scope`). What ``suite.yaml`` may say is
:mod:`.suite_spec`; queries, QA items and their files are :mod:`.queries`.

Optionally a page-level QA file (``qa.jsonl``: ``id``, ``question``, ``answers``, ``evidence:
[{"document", "page"}]``) drives the answer metrics. Relative dataset files resolve against the suite
folder; a relative ``corpus`` folder resolves against the repository root (the nearest ancestor of the
suite holding ``pyproject.toml``), and can be overridden.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mmrag.config import deep_merge
from mmrag.errors import InvalidInput
from mmrag.evaluate.beir import load_beir_corpus
from mmrag.evaluate.financebench import load_financebench
from mmrag.evaluate.mmlongbench import load_mmlongbench
from mmrag.evaluate.qrels import expand_document_patterns, load_qrels, split_page_judgments
from mmrag.evaluate.queries import QAItem, Query, load_qa, load_queries
from mmrag.evaluate.renaming import new_names, rename_judgments, rename_key, stage
from mmrag.evaluate.scope import check_scope, document_ids
from mmrag.evaluate.suite_spec import DatasetSpec, MetricsSpec, PipelineSpec, SuiteSpec
from mmrag.ingest.sniff import EXTENSIONS

__all__ = ["DatasetSpec", "MetricsSpec", "PipelineSpec", "QAItem", "Query", "Suite", "SuiteSpec",
           "list_documents", "load_suite", "page_counts"]

DOCUMENT_SUFFIXES = tuple(EXTENSIONS)  # every kind ingestion accepts (mmrag.ingest.sniff)
QuestionFile = Callable[[Path], tuple[list[Query], dict[str, dict[str, int]]]]
QUESTION_FILES: dict[str, QuestionFile] = {  # a benchmark's own question file, read where it lies (under corpus)
    "financebench": load_financebench,
    "mmlongbench": load_mmlongbench,
}


@dataclass(slots=True)
class Suite:
    """A loaded suite. Lifecycle: :func:`load_suite`, then :meth:`documents` when running."""

    spec: SuiteSpec
    path: Path  # the suite folder
    corpus_dir: Path  # resolved
    variant: str | None
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    qa: list[QAItem]
    page_qrels: dict[str, dict[str, int]] = field(default_factory=dict)  # page judgments of a document suite
    names: dict[str, str] = field(default_factory=dict)  # real basename -> ingested name (dataset.file_names)

    @property
    def name(self) -> str:
        return self.spec.name if not self.variant else f"{self.spec.name}:{self.variant}"

    @property
    def corpus_name(self) -> str:
        pipeline = self.spec.pipeline
        name = pipeline.corpus_name or f"eval-{self.spec.name}".lower()
        if pipeline.corpus and not pipeline.corpus_name:
            digest = hashlib.sha256(json.dumps(pipeline.corpus, sort_keys=True).encode()).hexdigest()[:8]
            name += f"-{digest}"
        if self.spec.dataset.file_names != "original":  # never the corpus holding the same bytes by real name
            name += f"-{self.spec.dataset.file_names}"
        return name

    def documents(self, workdir: Path, scratch: Path | None = None) -> list[Path]:
        """The files to ingest: BEIR records rendered to PDFs under ``workdir`` (kept, a cache); documents
        under new names (``dataset.file_names``) copied into ``scratch`` (default ``workdir``)."""
        if self.spec.dataset.format == "beir":
            return load_beir_corpus(self.corpus_dir, workdir)
        files = list_documents(self.corpus_dir, self.spec.dataset.include)
        if self.spec.dataset.file_names == "original":
            return files
        return stage(files, self.names, (scratch or workdir) / f"{self.spec.dataset.file_names}-names")

    def scope_ids(self) -> dict[str, str]:
        """The document ids of the files its queries' scopes name (ingested name -> content-hash id); {} when no
        query names a document (then nothing is read)."""
        if not any(q.scope and q.scope.documents for q in self.queries):
            return {}
        files = list_documents(self.corpus_dir, self.spec.dataset.include)
        return {self.names.get(name, name): doc_id for name, doc_id in document_ids(files).items()}

    def doc_key(self, filename: str, page: int) -> str:
        """The qrels id of a retrieved page."""
        base = Path(filename).name
        if self.spec.dataset.format == "beir":
            return Path(base).stem
        if self.spec.dataset.judge == "document":
            return base
        return f"{base}#{page}"


def list_documents(corpus_dir: Path, include: list[str]) -> list[Path]:
    """Document files under ``corpus_dir`` matching ``include``, sorted, unique."""
    found = {
        p
        for pattern in include
        for p in corpus_dir.glob(pattern)
        if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
    }
    return sorted(found)


def _read_spec_file(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: a suite file must hold a mapping, got {type(data).__name__}")
    return data


def _suite_file(path: Path) -> Path:
    if path.is_file():
        return path
    for name in ("suite.yaml", "suite.yml", "suite.json"):
        if (path / name).is_file():
            return path / name
    raise InvalidInput(f"no suite at {path}: expected a suite.yaml/suite.json file or a folder holding one")


def repo_root(start: Path) -> Path:
    """Nearest ancestor of ``start`` holding pyproject.toml (else ``start``)."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return start


def load_suite(path: Path | str, *, variant: str | None = None, corpus_dir: Path | str | None = None,
               split: str | None = None) -> Suite:
    """Load and validate a suite; ``variant`` applies named overrides, ``corpus_dir`` replaces the corpus,
    ``split`` (overriding ``dataset.split``) keeps the queries of one half."""
    file = _suite_file(Path(path).resolve())
    raw = _read_spec_file(file)
    if variant:
        variants = raw.get("variants") or {}
        if variant not in variants:
            raise InvalidInput(f"suite {file.parent.name!r} has no variant {variant!r}; allowed: "
                               f"{sorted(variants) or 'none'}", detail={"reason": "unknown_variant"})
        raw = deep_merge(raw, variants[variant])
    if split:
        raw = deep_merge(raw, {"dataset": {"split": split}})
    try:
        spec = SuiteSpec.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(f"invalid suite {file}: {exc}") from exc
    folder = file.parent
    corpus = Path(corpus_dir) if corpus_dir else Path(spec.dataset.corpus)
    if not corpus.is_absolute():
        corpus = (Path.cwd() if corpus_dir else repo_root(folder)) / corpus
    corpus = corpus.resolve()
    if not corpus.is_dir():
        raise InvalidInput(f"suite {spec.name}: corpus folder {corpus} does not exist (override it with corpus_dir)")
    ds = spec.dataset
    queries_path = (
        corpus / "queries.jsonl" if ds.format == "beir" and ds.queries == "queries.jsonl" else folder / ds.queries
    )
    qrels_path = corpus / "qrels" / "test.tsv" if ds.format == "beir" and ds.qrels == "qrels.tsv" else folder / ds.qrels
    if ds.format in QUESTION_FILES:
        queries, qrels = QUESTION_FILES[ds.format](corpus / ds.queries)
    else:
        queries, qrels = load_queries(queries_path), load_qrels(qrels_path)
    page_qrels: dict[str, dict[str, int]] = {}
    if ds.documents_folder and ds.judge == "document":
        qrels, page_qrels = split_page_judgments(qrels)
        qrels = expand_document_patterns(qrels, [p.name for p in list_documents(corpus, ds.include)], spec.name)
    suite = Suite(
        spec=spec,
        path=folder,
        corpus_dir=corpus,
        variant=variant,
        queries=queries,
        qrels=qrels,
        qa=load_qa(folder / ds.qa) if ds.qa else [],
        page_qrels=page_qrels,
    )
    if ds.tags is not None or ds.exclude_tags:  # first: a suite of fewer documents leaves their questions out
        select_tags(suite, ds.tags, ds.exclude_tags)
    check_suite(suite)
    if ds.documents_folder and ds.file_names != "original":
        rename_documents(suite)
    return select_split(suite, ds.split) if ds.split else suite


def rename_documents(suite: Suite) -> None:
    """Judgments and QA evidence under the names the documents are ingested by (checked first under the real names)."""
    suite.names = new_names(list_documents(suite.corpus_dir, suite.spec.dataset.include), suite.spec.dataset.file_names)
    suite.qrels = rename_judgments(suite.qrels, suite.names)
    suite.page_qrels = rename_judgments(suite.page_qrels, suite.names)
    suite.qa = [dataclasses.replace(item, evidence=[rename_key(e, suite.names) for e in item.evidence])
                for item in suite.qa]
    suite.queries = [q if q.scope is None else dataclasses.replace(q, scope=dataclasses.replace(
        q.scope, documents=tuple(suite.names[d] for d in q.scope.documents))) for q in suite.queries]


def select_split(suite: Suite, split: str) -> Suite:
    """The suite restricted to the queries, judgments and QA items of one split."""
    splits = sorted({q.split for q in suite.queries if q.split})
    if split not in splits:
        allowed = splits or "none (no query has a split field)"
        raise InvalidInput(f"suite {suite.name}: no query has split {split!r}; allowed: {allowed}")
    return _keep(suite, {q.id for q in suite.queries if q.split == split}, lambda item: item.split == split)


def select_tags(suite: Suite, tags: list[str] | None, exclude: list[str]) -> Suite:
    """The suite restricted to the queries (and QA items) carrying one of ``tags`` (None: any) and none of
    ``exclude``; a tag that no query carries is refused (a misspelt selection would quietly shrink the suite)."""
    carried = {t for q in suite.queries for t in q.tags}
    unknown = sorted(set(tags or []) - carried) + sorted(set(exclude) - carried)
    if unknown:
        raise InvalidInput(f"suite {suite.name}: no query carries the tags {unknown[:5]}; tags the queries carry: "
                           f"{sorted(carried)[:40]}", detail={"reason": "unknown_tag"})

    def wanted(item_tags: list[str]) -> bool:
        return (tags is None or bool(set(item_tags) & set(tags))) and not set(item_tags) & set(exclude)

    return _keep(suite, {q.id for q in suite.queries if wanted(q.tags)}, lambda item: wanted(item.tags))


def _keep(suite: Suite, keep: set[str], keep_qa: Callable[[QAItem], bool]) -> Suite:
    suite.queries = [q for q in suite.queries if q.id in keep]
    suite.qrels = {qid: judged for qid, judged in suite.qrels.items() if qid in keep}
    suite.page_qrels = {qid: judged for qid, judged in suite.page_qrels.items() if qid in keep}
    suite.qa = [item for item in suite.qa if keep_qa(item)]
    return suite


def check_suite(suite: Suite) -> None:
    """Every judged query exists; for a folder of documents every judged page exists in the corpus and
    every query's scope holds pages of the suite's documents."""
    ids = {q.id for q in suite.queries}
    if len(ids) != len(suite.queries):
        raise InvalidInput(f"suite {suite.name}: duplicate query ids")
    unknown = sorted(set(suite.qrels) - ids)
    if unknown:
        raise InvalidInput(f"suite {suite.name}: qrels name unknown queries {unknown[:5]}")
    scoped = [q for q in suite.queries if q.scope is not None]
    if not suite.spec.dataset.documents_folder:
        if scoped:
            raise InvalidInput(f"suite {suite.name}: query {scoped[0].id!r} has a scope; a beir suite's queries "
                               f"cannot (its documents are rendered records)")
        return
    pages = page_counts(list_documents(suite.corpus_dir, suite.spec.dataset.include))
    for query in suite.queries:
        if query.scope is not None:
            check_scope(query.id, query.scope, pages)
    keys = [doc for judged in suite.qrels.values() for doc in judged] + [e for qa in suite.qa for e in qa.evidence]
    if suite.spec.dataset.judge == "document":
        names = [k.rpartition("#")[0] if "#" in k else k for k in keys]
        missing = sorted({k for k in names if k not in pages})
        if missing:
            raise InvalidInput(f"suite {suite.name}: judged documents {missing[:5]} are not in {suite.corpus_dir}")
        keys = [key for judged in suite.page_qrels.values() for key in judged]  # pages named in a document suite
    for key in keys:
        name, _, page = key.rpartition("#")
        if name not in pages or not page.isdigit() or not 1 <= int(page) <= pages[name]:
            raise InvalidInput(f"suite {suite.name}: judged page {key!r} is not in the corpus {suite.corpus_dir}")


def page_counts(files: list[Path]) -> dict[str, int]:
    """Basename -> number of pages (1 for images)."""
    import pymupdf

    counts = {}
    for file in files:
        if file.suffix.lower() == ".pdf":
            with pymupdf.open(file) as doc:
                counts[file.name] = doc.page_count
        else:
            counts[file.name] = 1
    return counts
