"""What ``suite.yaml`` may say: the dataset, the pipeline's configuration, the metrics and named variants
(pydantic models; :func:`mmrag.evaluate.suite.load_suite` reads them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from mmrag.evaluate.metrics import METRIC_NAMES
from mmrag.evaluate.renaming import FileNames


class DatasetSpec(BaseModel):
    """Where the documents, queries and judgments are."""

    format: Literal["pdf-qrels", "beir", "financebench", "mmlongbench"] = "pdf-qrels"
    """``pdf-qrels`` (documents + qrels keyed ``filename#page``), ``beir``, or a benchmark's own question file
    read where it lies: ``financebench`` (:mod:`.financebench`), ``mmlongbench`` (:mod:`.mmlongbench`)."""

    @property
    def documents_folder(self) -> bool:
        """The documents are files under ``corpus`` picked by ``include`` (every format but ``beir``)."""
        return self.format != "beir"
    corpus: str
    """Folder of documents (pdf-qrels) or the BEIR folder. Relative: to the repository root."""
    include: list[str] = Field(default_factory=lambda: ["**/*"])
    """Glob patterns (relative to ``corpus``) of the documents to ingest (pdf-qrels)."""
    queries: str = "queries.jsonl"
    """Queries, one JSON object a line: ``_id`` (or ``id``), ``text`` (or ``query``), optional ``tags``,
    ``split`` and ``scope`` (``{"documents": [file names], "pages": {"first", "last"}}``: :mod:`.scope`).
    For a benchmark's own file (financebench, mmlongbench): relative to ``corpus``."""
    qrels: str = "qrels.tsv"
    """Judgments: ``query-id<TAB>corpus-id<TAB>score`` (header optional) or TREC ``qid 0 doc rel``."""
    qa: str | None = None
    """Optional page-level QA file for answer metrics."""
    tags: list[str] | None = None
    """Run only the queries carrying at least one of these tags (e.g. ``company:amd``); None: every query."""
    exclude_tags: list[str] = Field(default_factory=list)
    """Leave out the queries carrying any of these tags (e.g. ``document:3M_2018_10K.pdf``)."""
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
