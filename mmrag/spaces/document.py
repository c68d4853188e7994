"""The document space: every page also carries its document's evidence (title, entities, periods,
versions, labels; :mod:`mmrag.ingest.doc_evidence`) as two vectors, so a page's score can combine its
own match with its document's.

Stored per page (the same values on every page of a document):

- ``doc_text``: the dense text embedding (MiniLM) of the document's evidence text, stored as the
  corpus's ``text_datatype`` (float16 by default, like the text space's chunks);
- ``doc_bm25``: BM25 of the evidence text (IDF in the engine).

It adds no candidates of its own: :meth:`DocumentSpace.document_stage` is a prior on the pages the
page spaces found (see :func:`mmrag.retrieve.plan.build_plan`), one Qdrant query on either engine::

    formula: page * (1 + w * document + b * [the query names one of the document's periods])
      ├── page:      the page plan (fusion of the page spaces)                  $score[0]
      └── document:  DBSF of doc_text and doc_bm25 over all pages (limit L:     $score[1]
                     the pages of the best-matching documents)
"""

from __future__ import annotations

import numpy as np
import qdrant_edge as qe

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder
from mmrag.spaces.base import PageInput, QueryInput, Space
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

    def document_stage(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        """The pages of the ``limit`` best-matching pages' documents, scored by their document's match:
        DBSF of doc_text and doc_bm25. Single vectors over the whole collection: cheap, no page rescoring."""
        if not query.text:
            return None
        dense, sparse = self.query_vectors(query)
        stages = [QueryNode(limit=limit, using="doc_text", vector=dense, filter=flt)]
        if sparse is not None:
            stages.append(QueryNode(limit=limit, using="doc_bm25", vector=sparse, filter=flt))
        return stages[0] if len(stages) == 1 else QueryNode(limit=limit, prefetch=stages, fusion="dbsf")
