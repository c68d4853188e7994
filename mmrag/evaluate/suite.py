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

Optionally a page-level QA file (``qa.jsonl``: ``id``, ``question``, ``answers``, ``evidence:
[{"document", "page"}]``) drives the answer metrics. Relative dataset files resolve against the suite
folder; a relative ``corpus`` folder resolves against the repository root (the nearest ancestor of the
suite holding ``pyproject.toml``), and can be overridden.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from mmrag.config import deep_merge
from mmrag.errors import InvalidInput
from mmrag.evaluate.beir import load_beir_corpus
from mmrag.evaluate.metrics import METRIC_NAMES
from mmrag.evaluate.qrels import expand_document_patterns, load_qrels, split_page_judgments
from mmrag.evaluate.renaming import FileNames, new_names, rename_judgments, rename_key, stage
from mmrag.ingest.sniff import EXTENSIONS

DOCUMENT_SUFFIXES = tuple(EXTENSIONS)  # every kind ingestion accepts (mmrag.ingest.sniff)


class DatasetSpec(BaseModel):
    """Where the documents, queries and judgments are."""

    format: Literal["pdf-qrels", "beir", "financebench"] = "pdf-qrels"
    """``pdf-qrels`` (documents + qrels keyed ``filename#page``), ``beir`` or ``financebench``."""

    @property
    def documents_folder(self) -> bool:
        """The documents are files under ``corpus`` picked by ``include`` (every format but ``beir``)."""
        return self.format != "beir"
    corpus: str
    """Folder of documents (pdf-qrels) or the BEIR folder. Relative: to the repository root."""
    include: list[str] = Field(default_factory=lambda: ["**/*"])
    """Glob patterns (relative to ``corpus``) of the documents to ingest (pdf-qrels)."""
    queries: str = "queries.jsonl"
    """Queries, one JSON object a line: ``_id`` (or ``id``), ``text`` (or ``query``), optional ``tags``."""
    qrels: str = "qrels.tsv"
    """Judgments: ``query-id<TAB>corpus-id<TAB>score`` (header optional) or TREC ``qid 0 doc rel``."""
    qa: str | None = None
    """Optional page-level QA file for answer metrics."""
    split: str | None = None
    """Run only the queries (and QA items) whose ``split`` field is this (e.g. ``tune`` or ``test``: a
    tuning half and a held-apart half); None: all of them."""
    file_names: FileNames = "original"
    """Ingest the documents under other names (pdf-qrels): ``hashed`` (``<sha256 prefix>.pdf``) or
    ``numbered`` (``report (3).pdf``); judgments, written against the real names, follow the bytes.
    The runner copies the files under the new names before ingest (:mod:`.renaming`)."""
    judge: Literal["page", "document"] = "page"
    """``page``: qrels name pages (``filename#page``); ``document``: qrels name documents (a basename or a
    glob pattern over basenames such as ``*2023 Q3 AAPL*``), a retrieved page counts for its document and
    documents rank by their best page. BEIR suites always judge documents. In a ``document`` suite a
    judgment may still name a page (``report.pdf#12``, a question about one page): the query is judged
    at document level by that page's document and, in ``page_metrics``, at page level too."""


class PipelineSpec(BaseModel):
    """How the pipeline is configured and queried for this suite."""

    spaces: list[str] | None = None
    """Retrieval spaces (subset of text, bm25, clip, colpali); None: every space the corpus has."""
    weights: dict[str, float] | None = None
    """RRF weight per space (weighted requests use RRF)."""
    fusion: Literal["dbsf", "rrf"] | None = None
    """Fusion of the spaces' candidates; None: the pipeline's default (MMRAG_RETRIEVE__FUSION)."""
    rrf_k: int | None = Field(None, ge=1, le=1000)
    """RRF constant; None: the pipeline's default."""
    top_k: int = Field(10, ge=1, le=1000)
    """Results requested per query (should be >= the largest metric cutoff)."""
    answer_top_k: int = Field(5, ge=1, le=100)
    """Pages retrieved per QA question."""
    corpus_name: str | None = None
    """Corpus the documents are ingested into; default ``eval-<suite name>`` (plus a hash of ``corpus``)."""
    corpus: dict[str, Any] = Field(default_factory=dict)
    """CorpusConfig fields for the eval corpus when it is created: spaces, pool_factor,
    prefetch_quantization, ... (a different config gets a different default corpus name)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Overrides of mmrag Settings (models, pooling, visual-token budget, ...), nested like Settings."""


class MetricsSpec(BaseModel):
    """Which metrics at which cutoffs."""

    retrieval: list[str] = Field(default_factory=lambda: list(METRIC_NAMES))
    """Metric families: ndcg, recall, precision, mrr, map."""
    k: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    """Cutoffs."""
    primary: str = "ndcg@10"
    """Headline metric of reports and comparison plots."""
    rank_by: Literal["score", "pipeline"] = "score"
    """``score``: re-rank returned results by score, ties by doc id descending (trec_eval, reproducible
    when a pipeline returns equal fused scores in arbitrary order); ``pipeline``: keep the returned order."""
    answers: bool = True
    """Evaluate answers when the dataset has a QA file and the target can answer."""


class SuiteSpec(BaseModel):
    """The content of ``suite.yaml``."""

    name: str
    description: str = ""
    dataset: DatasetSpec
    pipeline: PipelineSpec = Field(default_factory=lambda: PipelineSpec.model_validate({}))
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    variants: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Named overrides of the fields above (e.g. ``bm25: {pipeline: {spaces: [bm25]}}``)."""


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    tags: list[str] = field(default_factory=list)
    split: str | None = None  # the half of the suite it belongs to (``dataset.split`` selects one)


@dataclass(frozen=True, slots=True)
class QAItem:
    id: str
    question: str
    answers: list[str]
    evidence: list[str]  # doc keys "filename#page"
    tags: list[str] = field(default_factory=list)
    split: str | None = None


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
    if ds.format == "financebench":
        from mmrag.evaluate.financebench import load_financebench

        queries, qrels = load_financebench(corpus / ds.queries)
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


def select_split(suite: Suite, split: str) -> Suite:
    """The suite restricted to the queries, judgments and QA items of one split."""
    splits = sorted({q.split for q in suite.queries if q.split})
    if split not in splits:
        allowed = splits or "none (no query has a split field)"
        raise InvalidInput(f"suite {suite.name}: no query has split {split!r}; allowed: {allowed}")
    keep = {q.id for q in suite.queries if q.split == split}
    suite.queries = [q for q in suite.queries if q.id in keep]
    suite.qrels = {qid: judged for qid, judged in suite.qrels.items() if qid in keep}
    suite.page_qrels = {qid: judged for qid, judged in suite.page_qrels.items() if qid in keep}
    suite.qa = [item for item in suite.qa if item.split == split]
    return suite


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InvalidInput(f"missing dataset file {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number}: not JSON: {exc}") from exc
    return rows


def load_queries(path: Path) -> list[Query]:
    """Queries from JSONL (BEIR ``_id``/``text`` or ``id``/``query``)."""
    queries = []
    for row in _read_jsonl(path):
        qid = str(row.get("_id", row.get("id", "")))
        text = row.get("text", row.get("query", ""))
        if not qid or not text:
            raise InvalidInput(f"{path}: every query needs an id (_id) and a text, got {row}")
        tags = row.get("tags") or (row.get("metadata") or {}).get("tags") or []
        split = row.get("split")
        queries.append(Query(id=qid, text=str(text), tags=[str(t) for t in tags], split=str(split) if split else None))
    return queries


def load_qa(path: Path) -> list[QAItem]:
    """Page-level QA items; evidence is a list of ``{"document", "page"}`` (or ``"file#page"``)."""
    items: list[QAItem] = []
    for row in _read_jsonl(path):
        evidence = [
            e if isinstance(e, str) else f"{Path(e['document']).name}#{int(e['page'])}" for e in row.get("evidence", [])
        ]
        answers = row.get("answers") or ([row["answer"]] if "answer" in row else [])
        if not row.get("question") or not answers:
            raise InvalidInput(f"{path}: every QA item needs a question and answers, got {row}")
        items.append(
            QAItem(
                id=str(row.get("id", len(items) + 1)),
                question=str(row["question"]),
                answers=[str(a) for a in answers],
                evidence=evidence,
                tags=[str(t) for t in row.get("tags", [])],
                split=str(row["split"]) if row.get("split") else None,
            )
        )
    return items


def check_suite(suite: Suite) -> None:
    """Every judged query exists; for pdf-qrels every judged page exists in the corpus."""
    ids = {q.id for q in suite.queries}
    if len(ids) != len(suite.queries):
        raise InvalidInput(f"suite {suite.name}: duplicate query ids")
    unknown = sorted(set(suite.qrels) - ids)
    if unknown:
        raise InvalidInput(f"suite {suite.name}: qrels name unknown queries {unknown[:5]}")
    if not suite.spec.dataset.documents_folder:
        return
    pages = page_counts(list_documents(suite.corpus_dir, suite.spec.dataset.include))
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
