"""CLIP / SigLIP dense embeddings with open_clip (``open_clip:<model>/<pretrained>``).

Spec forms (all go through ``open_clip.create_model_and_transforms``):

- ``open_clip:ViT-B-32/laion2b_s34b_b79k`` — a built-in config and a pretrained tag (downloads);
- ``open_clip:ViT-B-32//path/to/weights.safetensors`` — a built-in (or registered) config and a
  local ``.safetensors``/``.pt`` file;
- ``open_clip:local-dir:/path/to/dir`` — a folder with ``open_clip_config.json`` and weights;
- ``open_clip:hf-hub:org/repo`` — an open_clip repo on the hub;
- ``open_clip:ViT-B-32/none`` — random weights (benchmarks and tests only; never silent).

Both towers return L2-normalised ``(dim,)`` float32 vectors; images go through the model's
own preprocessing, in :meth:`OpenClipEmbedder.prepare` (the embedding service runs it off the
forward thread), and :meth:`OpenClipEmbedder.compute` runs the towers on the prepared tensors.
Anything that stops the model loading raises :class:`Unavailable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmrag.devices import resolve_device, resolve_dtype
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind
from mmrag.errors import InvalidInput, Unavailable
from mmrag.types import Modality

_SCHEMAS = ("hf-hub:", "local-dir:")


def parse_open_clip_name(name: str) -> tuple[str, str | None]:
    """Split ``<model>/<pretrained>`` into open_clip's ``(model_name, pretrained)``."""
    if name.startswith(_SCHEMAS):
        return name, None
    model, _, pretrained = name.partition("/")
    if not model or not pretrained:
        raise InvalidInput(f"open_clip spec needs '<model>/<pretrained tag or weights path>', got {name!r} "
                           "(e.g. open_clip:ViT-B-32/laion2b_s34b_b79k; '/none' for random weights)")
    return model, None if pretrained == "none" else pretrained


class OpenClipEmbedder(Embedder):
    """Lifecycle: loads model, preprocessing and tokenizer once in ``__init__``; then
    ``embed_batch`` runs the image tower on images and the text tower on texts."""

    modalities = frozenset({Modality.TEXT, Modality.IMAGE})
    multivector = False

    def __init__(self, name: str, options: EmbedderOptions) -> None:
        import open_clip
        import torch

        self.spec = f"open_clip:{name}"
        model_name, pretrained = parse_open_clip_name(name)
        self.device = resolve_device(options.device)
        self.dtype = resolve_dtype(options.dtype, self.device)
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                model_name, pretrained=pretrained, device=self.device)
            self.tokenizer = open_clip.get_tokenizer(model_name)
        except Exception as exc:  # offline hub, missing file, unknown config, bad checkpoint, ...
            raise Unavailable(f"cannot load open_clip model {name!r}: {exc}") from exc
        self.model = model.to(dtype=self.dtype).eval()
        self.preprocess = preprocess
        self.max_batch = 64 if self.device.startswith("cuda") else 32
        with torch.inference_mode():
            self.dim = int(self._encode_texts(["probe"]).shape[1])

    def _encode_texts(self, texts: list[str]) -> np.ndarray:
        tokens = self.tokenizer(texts).to(self.device)  # (B, context_length) int
        vecs = self.model.encode_text(tokens, normalize=True)  # (B, dim)
        return vecs.float().cpu().numpy()

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """Per item ``("text", token ids (1, context_length))`` or ``("image", pixels (1, 3, H, W))``:
        tokenising and the model's own resize/crop/normalise happen here, off the forward thread."""
        texts = [str(it) for it in items if isinstance(it, str)]
        tokens = iter(self.tokenizer(texts)) if texts else iter(())
        out: list[Any] = []
        for it in items:
            if isinstance(it, str):
                out.append(("text", next(tokens)[None]))
            else:
                out.append(("image", self.preprocess(it.convert("RGB"))[None]))  # type: ignore[union-attr]
        return out

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        """One forward per tower over the prepared rows; L2-normalised ``(dim,)`` vectors in order."""
        import torch

        out: list[np.ndarray | None] = [None] * len(prepared)
        with torch.inference_mode():
            for tower in ("text", "image"):
                idx = [i for i, (t, _) in enumerate(prepared) if t == tower]
                if not idx:
                    continue
                batch = torch.cat([prepared[i][1] for i in idx]).to(self.device)
                if tower == "text":
                    vecs = self.model.encode_text(batch, normalize=True)  # (B, dim)
                else:
                    vecs = self.model.encode_image(batch.to(self.dtype), normalize=True)  # (B, dim)
                for i, v in zip(idx, vecs.float().cpu().numpy(), strict=True):
                    out[i] = v
        return [np.ascontiguousarray(v, dtype=np.float32) for v in out if v is not None]

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.check_items(items)
        return self.compute(self.prepare(items, kind), kind)
