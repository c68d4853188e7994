"""ColPali-family multi-vectors with transformers' native classes (``hf:<hub id or folder>``).

``hf:vidore/colqwen2-v1.0-hf`` or ``hf:/path/to/dir`` loads a checkpoint in the HF
``*ForRetrieval`` format (``ColQwen2ForRetrieval``, ``ColPaliForRetrieval``,
``ColModernVBertForRetrieval``, chosen from ``config.model_type``) with ``AutoProcessor``.
These classes have no torch cap and are maintained in transformers; colpali-engine
(``colpali:``, see ``colpali_backend``) covers its own, larger model zoo and adapter repos.

:class:`MultiVectorEmbedder` is the shared forward for both backends: page images ->
``(n_image_tokens, dim)`` (only the rows of the image placeholder tokens when the processor
tells which they are), queries -> ``(n_query_tokens, dim)`` (padding rows dropped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmrag.devices import resolve_device, resolve_dtype
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind
from mmrag.errors import Unavailable
from mmrag.types import Modality

HF_RETRIEVAL_CLASSES = {
    "colqwen2": "ColQwen2ForRetrieval",
    "colpali": "ColPaliForRetrieval",
    "colmodernvbert": "ColModernVBertForRetrieval",
}


class MultiVectorEmbedder(Embedder):
    """Lifecycle: a subclass loads ``model`` and ``processor`` once; ``prepare`` runs each image
    through ``process_images`` and each text through ``process_queries`` (alone, off the forward
    thread in the service); ``compute`` pads them into one batch per modality, one forward each.

    ``image_tokens_only``: for images keep only the image-placeholder rows (the ones that
    carry the page), dropping the fixed prompt rows — fewer bytes per page, same role in MaxSim.
    """

    modalities = frozenset({Modality.TEXT, Modality.IMAGE})
    multivector = True
    image_tokens_only = True

    model: Any
    processor: Any
    device: str

    def _forward(self, batch: Any) -> Any:
        """``(B, L, dim)`` embeddings of a processed batch."""
        raise NotImplementedError

    def _image_mask(self, batch: Any) -> Any | None:
        """``(B, L)`` bool mask of image-token rows, or None when the processor cannot say."""
        return None

    def _run(self, batch: Any, images: bool) -> list[np.ndarray]:
        batch = batch.to(self.device)
        if "pixel_values" in batch:  # processors emit float32; the model may run in bf16/fp16
            batch["pixel_values"] = batch["pixel_values"].to(self.model.dtype)
        emb = self._forward(batch).float()  # (B, L, dim), rows L2-normalised, padding rows zero
        keep = batch["attention_mask"].bool()  # (B, L)
        if images and self.image_tokens_only:
            mask = self._image_mask(batch)
            if mask is not None:
                keep = keep & mask.to(keep.device)
        rows = [e[k] for e, k in zip(emb, keep, strict=True)]  # (n_kept_i, dim) each
        return [np.ascontiguousarray(r.cpu().numpy(), dtype=np.float32) for r in rows]

    def _process_images(self, images: list[Image.Image]) -> Any:
        return self.processor.process_images(images=images)

    def _process_queries(self, texts: list[str]) -> Any:
        return self.processor.process_queries(text=texts)

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Texts are embedded as queries (the family does not embed text documents)."""
        self.check_items(items)
        return self.compute(self.prepare(items, kind), kind)

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """Per item ``(is_image, row)``: the processor's inputs for that item alone (queries through
        ``process_queries``, RGB images through ``process_images``), to be collated by :meth:`compute`."""
        from mmrag.embed.features import split_rows  # torch: imported when a model runs

        out: list[Any] = []
        for it in items:
            if isinstance(it, str):
                out.append((False, split_rows(self._process_queries([it]))[0]))
            else:
                out.append((True, split_rows(self._process_images([it.convert("RGB")]))[0]))
        return out

    def size(self, prepared: Any) -> int:
        return int(prepared[1]["attention_mask"].shape[1])

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        """Queries and images collated apart (as the processor pads a batch), one forward each."""
        import torch
        from transformers import BatchFeature

        from mmrag.embed.features import collate_rows

        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        pads = {"input_ids": getattr(tokenizer, "pad_token_id", None) or 0, "labels": -100}
        out: dict[int, np.ndarray] = {}
        with torch.inference_mode():
            for images in (False, True):
                idx = [i for i, (is_image, _) in enumerate(prepared) if is_image == images]
                if not idx:
                    continue
                batch = collate_rows([prepared[i][1] for i in idx], pad_values=pads,
                                     padding_side=getattr(tokenizer, "padding_side", "right"))
                out.update(zip(idx, self._run(BatchFeature(batch), images=images), strict=True))
        return [out[i] for i in range(len(prepared))]


class HFColPaliEmbedder(MultiVectorEmbedder):
    """transformers-native ``*ForRetrieval`` model + ``AutoProcessor``."""

    def __init__(self, name: str, options: EmbedderOptions) -> None:
        import transformers

        self.spec = f"hf:{name}"
        self.device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, self.device)
        try:
            config = transformers.AutoConfig.from_pretrained(name)
            class_name = HF_RETRIEVAL_CLASSES.get(config.model_type)
            if class_name is None:
                known = ", ".join(sorted(HF_RETRIEVAL_CLASSES))
                raise Unavailable(f"hf:{name} has model_type {config.model_type!r}; hf: takes {known}")
            model_class = getattr(transformers, class_name)
            self.model = model_class.from_pretrained(name, dtype=dtype).to(self.device).eval()
            self.processor = transformers.AutoProcessor.from_pretrained(name)
        except Unavailable:
            raise
        except Exception as exc:  # offline hub, missing weights, incompatible checkpoint, ...
            raise Unavailable(f"cannot load ColPali-family model hf:{name}: {exc}") from exc
        self.dim = int(config.embedding_dim)
        self.max_batch = 16 if self.device.startswith("cuda") else 4
        self._image_token_id = getattr(self.processor, "image_token_id", None)

    def _forward(self, batch: Any) -> Any:
        return self.model(**batch).embeddings

    def _image_mask(self, batch: Any) -> Any | None:
        if self._image_token_id is None:
            return None
        return batch["input_ids"] == self._image_token_id
