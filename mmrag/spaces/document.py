"""The document space: every page also carries its document's evidence (title, entities, periods,
versions, labels; :mod:`mmrag.ingest.doc_evidence`) as two vectors, so a page's score can combine its
own match with its document's.

Stored per page (the same values on every page of a document):

- ``doc_text``: the dense text embedding (MiniLM) of the document's evidence text, stored as the
  corpus's ``text_datatype`` (float16 by default, like the text space's chunks);
- ``doc_bm25``: BM25 of the evidence text (IDF in the engine).

It adds no candidates of its own: :meth:`DocumentSpace.chosen_documents_stage` is a prior on the pages the
page spaces found (see :func:`mmrag.retrieve.plan.build_plan`), one Qdrant query on either engine::

    formula: page * (1 + w * document + s * fit)
      ├── page:      the page plan (fusion of the page spaces)                  $score[0]
      └── document:  DBSF of doc_text and doc_bm25, each over every page of     $score[1]
                     its chosen documents (no cut inside a document)

The documents are chosen before, by :meth:`DocumentSpace.document_selection`: each vector scored on one page
per document (the first page a filter allows), so the best documents come out whole and ties between them are
broken by document id (:func:`mmrag.retrieve.document_choice.choose_documents`). A cut of the pages themselves
would fall inside a document's pages, which all score alike, in the engine's own order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import qdrant_edge as qe

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.spaces.base import DocumentChoice, PageInput, QueryInput, Space
from mmrag.store.base import Datatype, FilterSpec, QueryNode, SpaceSpec, SparseVec, VectorValue

EVIDENCE_AVG_LEN = 40.0  # BM25 length normalisation of evidence texts (tens of words, not pages)


class DocumentSpace(Space):
    name = "document"
    embedder_name = "text"
    document_level = True

    def __init__(self, embedder: Embedder, datatype: Datatype = "float16") -> None:
        self.embedder = embedder
        self.datatype: Datatype = datatype
        self.bm25 = qe.Bm25(qe.Bm25Config(avg_len=EVIDENCE_AVG_LEN, language="english"))

    def for_corpus(self, config: CorpusConfig) -> Space:
        return self if config.text_datatype == self.datatype else DocumentSpace(self.embedder, config.text_datatype)

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("doc_text", "dense", self.embedder.dim, datatype=self.datatype),
                SpaceSpec("doc_bm25", "sparse", idf=True)]

    def evidence_vectors(self, texts: list[str]) -> list[dict[str, VectorValue]]:
        """Both vectors of each evidence text (an empty dict for an empty text)."""
        wanted = [t for t in dict.fromkeys(texts) if t.strip()]
        dense = dict(zip(wanted, self.embedder.embed_many(wanted, "document"), strict=True)) if wanted else {}
        out: list[dict[str, VectorValue]] = []
        for text in texts:
            if text not in dense:
                out.append({})
                continue
            vectors: dict[str, VectorValue] = {"doc_text": np.asarray(dense[text], dtype=np.float32)}
            sparse = self.bm25.embed_document(text)
            if len(sparse.indices):
                vectors["doc_bm25"] = SparseVec(indices=list(sparse.indices), values=list(sparse.values))
            out.append(vectors)
        return out

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        return self.evidence_vectors([p.evidence for p in pages])

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        return None  # no candidates of its own: see document_stage

    def query_vectors(self, query: QueryInput) -> tuple[np.ndarray, SparseVec | None]:
        if "text" not in query.cache:
            query.cache["text"] = self.embedder.embed(query.text, "query")[None, :]  # (1, dim), shared with text
        dense = np.asarray(query.cache["text"], dtype=np.float32)[0]
        sparse = self.bm25.embed_query(query.text)
        return dense, (SparseVec(list(sparse.indices), list(sparse.values)) if len(sparse.indices) else None)

    def vectors(self, query: QueryInput) -> list[tuple[str, VectorValue]]:
        """(stored vector, query vector) of each document vector the query has something for."""
        if not query.text:
            return []
        dense, sparse = self.query_vectors(query)
        return [("doc_text", dense)] + ([("doc_bm25", sparse)] if sparse is not None else [])

    def document_stage(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        """The ``limit`` best pages ``flt`` allows, scored by their document's match: DBSF of doc_text and
        doc_bm25 (a limit that covers the pages ``flt`` allows, as the ranker's candidates give, cuts none)."""
        stages = [QueryNode(limit=limit, using=using, vector=vector, filter=flt)
                  for using, vector in self.vectors(query)]
        return _fused(stages, limit)

    def document_selection(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> list[tuple[str, QueryNode]]:
        """Each document vector over one page per document: the first page ``flt`` allows (page 1, or the first
        of its page range; every document has its pages from 1). A full scan of those points (one per document:
        the exhaustive answer, whatever the collection's size)."""
        first = flt.ranges["page"][0] if flt is not None and "page" in flt.ranges else None
        one = FilterSpec(match=dict(flt.match) if flt else {}, ranges=dict(flt.ranges) if flt else {})
        one.ranges["page"] = (first or 1.0, first or 1.0)
        return [(using, QueryNode(limit=limit, using=using, vector=vector, filter=one, exact=True))
                for using, vector in self.vectors(query)]

    def chosen_documents_stage(self, query: QueryInput, chosen: Mapping[str, DocumentChoice],
                               flt: FilterSpec | None) -> QueryNode | None:
        """Each vector over every page of its chosen documents that ``flt`` allows (a limit of all their pages and
        a full scan of them: no cut, no approximation), fused by DBSF over all of them."""
        stages = []
        for using, vector in self.vectors(query):
            choice = chosen.get(using)
            if choice is None or not choice.documents:
                continue
            within = FilterSpec(match=dict(flt.match) if flt else {}, ranges=dict(flt.ranges) if flt else {})
            within.match["document_id"] = list(choice.documents)  # the choice already met flt's documents
            stages.append(QueryNode(limit=choice.pages, using=using, vector=vector, filter=within, exact=True))
        return _fused(stages, sum(s.limit for s in stages))


def _fused(stages: list[QueryNode], limit: int) -> QueryNode | None:
    """One stage as it is, several fused by DBSF (``limit`` results), none: None."""
    if len(stages) <= 1:
        return stages[0] if stages else None
    return QueryNode(limit=limit, prefetch=stages, fusion="dbsf")
