"""``fake:<dim>`` / ``fake-mv:<dim>``: deterministic hash embeddings for unit tests of other stages.

Never evidence that a model backend works; only that the plumbing around an embedder does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind, register_embedder
from mmrag.errors import InvalidInput
from mmrag.types import Modality


def _seed(item: Item) -> int:
    data = item.encode() if isinstance(item, str) else item.tobytes()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "little")


class FakeEmbedder(Embedder):
    modalities = frozenset({Modality.TEXT, Modality.IMAGE})

    def __init__(self, dim: int, multivector: bool, spec: str) -> None:
        self.dim, self.multivector, self.spec = dim, multivector, spec

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.check_items(items)
        out = []
        for item in items:
            rng = np.random.default_rng(_seed(item))
            rows = (4 if isinstance(item, str) else 16) if self.multivector else 1
            v = rng.standard_normal((rows, self.dim)).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            out.append(v if self.multivector else v[0])
        return out


def _factory(multivector: bool):
    def build(name: str, options: EmbedderOptions) -> Embedder:
        if not name.isdigit() or not 1 <= int(name) <= 4096:
            raise InvalidInput(f"fake embedder spec needs a dimension 1..4096, got {name!r}")
        return FakeEmbedder(int(name), multivector, f"{'fake-mv' if multivector else 'fake'}:{name}")

    return build


register_embedder("fake", _factory(False))
register_embedder("fake-mv", _factory(True))
