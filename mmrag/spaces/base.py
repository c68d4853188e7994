"""The space seam: each space names the vectors it stores, embeds pages, and turns a query
into prefetch stages. The retriever fuses the stages of all spaces a request uses."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PIL import Image

from mmrag.config import CorpusConfig
from mmrag.store.base import FilterSpec, QueryNode, SpaceSpec, VectorValue
from mmrag.types import Chunk, Page

if TYPE_CHECKING:
    from mmrag.embed.base import Embedder


@dataclass(slots=True)
class PageInput:
    """What a space may embed of one page."""

    page: Page
    chunks: list[Chunk]
    image: Image.Image | None = None  # decoded render (visual spaces)
    evidence: str = ""  # the document's evidence text (mmrag.ingest.doc_evidence.evidence_text); document space
    context: str = ""  # the page's section path as one line (mmrag.types.section_line)
    label: str = ""  # the document's short label: title · entity · period (mmrag.ingest.chunking.document_label)
    table_headers: list[str] = field(default_factory=list)  # per chunk: the header of the table it starts in, or ""


@dataclass(slots=True)
class QueryInput:
    """A query as the spaces see it (embeddings are computed once per space and cached here)."""

    text: str = ""
    image: Image.Image | None = None
    cache: dict[str, VectorValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentChoice:
    """The documents a document-level vector ranks best for a query, whole: the best by that vector alone (ties
    by document id) until their pages reach the document stage's budget (``mmrag.retrieve.document_choice``)."""

    documents: tuple[str, ...]
    pages: int  # their pages (at least those any filter leaves): a stage over them with this limit returns all


class Space(abc.ABC):
    """Lifecycle: built by the composition root from loaded embedders; stateless afterwards."""

    name: str  # its name in the space registry (mmrag.spaces.registry)
    embedder_name: str | None = None  # the embedder it is built from ("text", "clip", "colpali"); None: none
    takes_text_query: bool = True
    takes_image_query: bool = False
    needs_image: bool = False  # page_vectors wants decoded page images
    document_level: bool = False  # rescoring pages by their document's match (document_stage), no prefetch

    @classmethod
    def build(cls, embedders: Mapping[str, Embedder]) -> Space | None:
        """This space over its embedder; None when that embedder is not loaded (the space is off)."""
        if cls.embedder_name is None:
            return cls()
        embedder = embedders.get(cls.embedder_name)
        return cls(embedder) if embedder is not None else None  # type: ignore[call-arg]

    @abc.abstractmethod
    def specs(self) -> list[SpaceSpec]:
        """Named vectors this space stores."""

    @abc.abstractmethod
    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        """Vectors of each page (an empty dict when the page has nothing for this space)."""

    @abc.abstractmethod
    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        """A stage producing ``limit`` candidates, or None when the query has nothing for this space."""

    def for_corpus(self, config: CorpusConfig) -> Space:
        """This space with a corpus's options (pooling, quantisation); stateless spaces return self."""
        return self

    def document_stage(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        """A stage scoring the ``limit`` best pages ``flt`` allows by their document's match to the query
        (document-level spaces only)."""
        return None

    def document_selection(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> list[tuple[str, QueryNode]]:
        """(vector, stage) per document vector, each scoring one page of every document ``flt`` allows (so a
        document's pages, which share its vectors, are never a tie to cut inside), ``limit`` documents
        (document-level spaces only)."""
        return []

    def chosen_documents_stage(self, query: QueryInput, chosen: Mapping[str, DocumentChoice],
                               flt: FilterSpec | None) -> QueryNode | None:
        """:meth:`document_stage` over every page of each vector's ``chosen`` documents that ``flt`` allows, with
        no cut (document-level spaces only)."""
        return None

    def rerank(self, query: QueryInput) -> tuple[str, VectorValue] | None:
        """(vector name, query vector) for a final rerank of fused candidates; None if this space does not rerank."""
        return None
