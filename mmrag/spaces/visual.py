"""Visual spaces: CLIP/SigLIP dense page embeddings and ColPali-family late interaction.

ColPali stores two named vectors per page:

- ``colpali``: the full multi-vector (hierarchically pooled by ``CorpusConfig.pool_factor``,
  1 = not pooled), *without* HNSW: it is only read to rerank candidates by exact MaxSim;
- ``colpali_mean``: the pooled prefetch vector (the normalised mean of the rows, one
  ``(dim,)`` vector), HNSW-indexed and quantised as ``CorpusConfig.prefetch_quantization``
  says: the cheap first stage. The query side is the mean of the query's token vectors.

Measured (docs/parts/retrieval.md): a pooled multi-vector prefetch recalls a little more
per candidate but costs ~50x more to search than this one HNSW-indexed vector.

Both spaces take text and image queries ("pages like this image").
"""

from __future__ import annotations

import numpy as np

from mmrag.config import CorpusConfig
from mmrag.embed.base import Embedder, Item
from mmrag.embed.pooling import hierarchical_pool, prefetch_vector
from mmrag.spaces.base import PageInput, QueryInput, Space
from mmrag.store.base import FilterSpec, Quantization, QueryNode, SpaceSpec, VectorValue
from mmrag.types import Modality


def _query_item(query: QueryInput) -> Item | None:
    """The image when there is one (with text + image, the visual spaces embed the image and
    the text spaces the text), else the text."""
    if query.image is not None:
        return query.image
    return query.text or None


def _page_images(pages: list[PageInput]) -> tuple[list[int], list[Item]]:
    """Indices and images of the pages that have a decoded image."""
    todo = [i for i, p in enumerate(pages) if p.image is not None]
    return todo, [img for p in pages if (img := p.image) is not None]


def pool_rows(embedding: np.ndarray, factor: int) -> np.ndarray:
    """``(n, dim)`` -> ``(<= max(n // factor, 1), dim)``: hierarchical pooling, identity at 1."""
    return embedding if factor <= 1 else hierarchical_pool(embedding, factor).vectors


class ClipSpace(Space):
    """Dense CLIP/SigLIP: one vector per page image; text or image queries."""

    name = "clip"
    embedder_name = "clip"
    takes_text_query = True
    takes_image_query = True
    needs_image = True

    def __init__(self, embedder: Embedder, quantization: Quantization = "none") -> None:
        self.embedder, self.quantization = embedder, quantization

    def for_corpus(self, config: CorpusConfig) -> Space:
        return ClipSpace(self.embedder, config.prefetch_quantization)

    def specs(self) -> list[SpaceSpec]:
        return [SpaceSpec("clip", "dense", self.embedder.dim, quantization=self.quantization)]

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        todo, images = _page_images(pages)
        vectors = self.embedder.embed_many(images, "document") if todo else []
        out: list[dict[str, VectorValue]] = [{} for _ in pages]
        for i, v in zip(todo, vectors, strict=True):
            out[i] = {"clip": v}
        return out

    def query_vector(self, query: QueryInput) -> np.ndarray | None:
        item = _query_item(query)
        if item is None or (isinstance(item, str) and Modality.TEXT not in self.embedder.modalities):
            return None
        if "clip" not in query.cache:
            query.cache["clip"] = self.embedder.embed(item, "query")
        vec = query.cache["clip"]
        assert isinstance(vec, np.ndarray)
        return vec

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        vec = self.query_vector(query)
        return None if vec is None else QueryNode(limit=limit, using="clip", vector=vec, filter=flt)


class ColpaliSpace(Space):
    """Late interaction: the mean (pooled prefetch) vector prefetches, multi-vectors rerank by MaxSim."""

    name = "colpali"
    embedder_name = "colpali"
    takes_text_query = True
    takes_image_query = True
    needs_image = True

    def __init__(self, embedder: Embedder, pool_factor: int = 1, quantization: Quantization = "none") -> None:
        self.embedder, self.pool_factor, self.quantization = embedder, pool_factor, quantization

    def for_corpus(self, config: CorpusConfig) -> Space:
        return ColpaliSpace(self.embedder, config.pool_factor, config.prefetch_quantization)

    def specs(self) -> list[SpaceSpec]:
        full = SpaceSpec("colpali", "multivector", self.embedder.dim, index=False)
        mean = SpaceSpec("colpali_mean", "dense", self.embedder.dim, quantization=self.quantization)
        return [full, mean]

    def page_vectors(self, pages: list[PageInput]) -> list[dict[str, VectorValue]]:
        todo, images = _page_images(pages)
        raw = self.embedder.embed_many(images, "document") if todo else []
        out: list[dict[str, VectorValue]] = [{} for _ in pages]
        for i, mv in zip(todo, raw, strict=True):
            out[i] = page_multivectors(mv, self.pool_factor)
        return out

    def query_vector(self, query: QueryInput) -> np.ndarray | None:
        item = _query_item(query)
        if item is None:
            return None
        if "colpali" not in query.cache:
            query.cache["colpali"] = self.embedder.embed(item, "query")  # (n_q, dim)
        vec = query.cache["colpali"]
        assert isinstance(vec, np.ndarray)
        return vec

    def prefetch(self, query: QueryInput, limit: int, flt: FilterSpec | None) -> QueryNode | None:
        vec = self.query_vector(query)
        if vec is None:
            return None
        return QueryNode(limit=limit, using="colpali_mean", vector=prefetch_vector(vec), filter=flt)

    def rerank(self, query: QueryInput) -> tuple[str, VectorValue] | None:
        vec = self.query_vector(query)
        return None if vec is None else ("colpali", vec)


def page_multivectors(embedding: np.ndarray, pool_factor: int) -> dict[str, VectorValue]:
    """The stored vectors of one page: the multi-vector (pooled by ``pool_factor``) and its mean."""
    full = pool_rows(np.asarray(embedding, dtype=np.float32), pool_factor)  # (n / pool_factor, dim)
    return {"colpali": full, "colpali_mean": prefetch_vector(full)}  # (dim,)


__all__ = ["ClipSpace", "ColpaliSpace", "page_multivectors"]
