"""CLIP / SigLIP dense embeddings with open_clip (``open_clip:<model>/<pretrained>``).

Spec forms (all go through ``open_clip.create_model_and_transforms``):

- ``open_clip:ViT-B-32/laion2b_s34b_b79k`` — a built-in config and a pretrained tag (downloads);
- ``open_clip:ViT-B-32//path/to/weights.safetensors`` — a built-in (or registered) config and a
  local ``.safetensors``/``.pt`` file;
- ``open_clip:local-dir:/path/to/dir`` — a folder with ``open_clip_config.json`` and weights;
- ``open_clip:hf-hub:org/repo`` — an open_clip repo on the hub;
- ``open_clip:ViT-B-32/none`` — random weights (benchmarks and tests only; never silent).

Both towers return L2-normalised ``(dim,)`` float32 vectors; images go through the model's
own preprocessing. Anything that stops the model loading raises :class:`Unavailable`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

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

    def _encode_images(self, images: list[Image.Image]) -> np.ndarray:
        import torch

        pixels = torch.stack([self.preprocess(im.convert("RGB")) for im in images])  # (B, 3, H, W)
        vecs = self.model.encode_image(pixels.to(self.device, self.dtype), normalize=True)  # (B, dim)
        return vecs.float().cpu().numpy()

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        import torch

        self.check_items(items)
        out: list[np.ndarray | None] = [None] * len(items)
        text_idx = [i for i, it in enumerate(items) if isinstance(it, str)]
        image_idx = [i for i, it in enumerate(items) if not isinstance(it, str)]
        with torch.inference_mode():
            if text_idx:
                for i, v in zip(text_idx, self._encode_texts([str(items[i]) for i in text_idx]), strict=True):
                    out[i] = v
            if image_idx:
                images = [items[i] for i in image_idx]
                for i, v in zip(image_idx, self._encode_images(images), strict=True):  # type: ignore[arg-type]
                    out[i] = v
        return [np.ascontiguousarray(v, dtype=np.float32) for v in out if v is not None]
