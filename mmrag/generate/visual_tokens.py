"""Visual-token accounting: how many placeholder tokens an image becomes, before any GPU work.

Pure functions that mirror each family's image processor exactly (tested against the real
transformers processors on many shapes):

* Qwen2-VL / Qwen2.5-VL (``qwen2_vl``, ``qwen2_5_vl``): ``smart_resize`` to multiples of
  ``patch_size * merge_size`` (28 px) within ``[min_pixels, max_pixels]``, 14-px patches, 2x2 merge:
  tokens = (h / 28) * (w / 28). A 3024x4032 photo at ``max_pixels = 1280*28*28`` is 1,230 tokens.
* PaliGemma / SigLIP (``paligemma``): fixed resolution, ``(image_size / patch_size) ** 2`` tokens.
* Idefics3 / SmolVLM (``idefics3``): longest edge resized, then tiled into ``max_image_size``
  squares plus one global image; ``image_seq_len`` tokens per tile.

A *budget* (max tokens for one image) is applied by choosing a smaller resize target, never by
truncating tokens, so the cost a caller asks for is the cost the model sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from mmrag.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class VisualTokenPlan:
    """How one image will be preprocessed and what it costs."""

    width: int  # original width in pixels
    height: int  # original height in pixels
    resized_width: int  # width the processor resizes to (per tile for tiling families)
    resized_height: int
    tokens: int  # placeholder tokens in the prompt (= rows of the vision encoder output)
    tiles: int = 1  # crops fed to the vision encoder (tiling families), else 1
    grid_thw: tuple[int, int, int] | None = None  # Qwen (t, h, w) in 14-px patches
    max_pixels: int | None = None  # Qwen: the max_pixels that yields this plan (processor kwarg)
    longest_edge: int | None = None  # Idefics3: the size["longest_edge"] that yields this plan


class VisualTokenizer(Protocol):
    """One family's accounting. ``plan`` raises InvalidInput when no resize fits ``max_tokens``."""

    @property
    def family(self) -> str: ...

    @property
    def min_tokens(self) -> int:
        """Fewest tokens any image can cost."""
        ...

    def plan(self, width: int, height: int, max_tokens: int | None = None) -> VisualTokenPlan: ...


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's resize target ``(h, w)``: multiples of ``factor``, area within the bounds."""
    if min(height, width) <= 0:
        raise InvalidInput(f"image has no pixels ({width}x{height})")
    if max(height, width) / min(height, width) > 200:
        raise InvalidInput(f"image aspect ratio {width}x{height} exceeds 200:1; allowed: up to 200:1")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True, slots=True)
class QwenVisualTokenizer:
    """Qwen2-VL / Qwen2.5-VL accounting (dynamic resolution)."""

    min_pixels: int = 56 * 56
    max_pixels: int = 1280 * 28 * 28
    patch_size: int = 14
    merge_size: int = 2
    family: str = "qwen2_5_vl"

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size

    @property
    def min_tokens(self) -> int:
        return 1

    def plan(self, width: int, height: int, max_tokens: int | None = None) -> VisualTokenPlan:
        cap = self.max_pixels
        if max_tokens is not None:
            cap = min(cap, max_tokens * self.factor**2)
        if cap < self.min_pixels:
            raise InvalidInput(
                f"{max_tokens} visual tokens is below this model's minimum "
                f"({math.ceil(self.min_pixels / self.factor**2)} at min_pixels={self.min_pixels})"
            )
        while True:
            h, w = smart_resize(height, width, self.factor, self.min_pixels, cap)
            tokens = (h // self.factor) * (w // self.factor)
            if max_tokens is None or tokens <= max_tokens or cap <= self.factor**2:
                break
            cap -= self.factor**2  # extreme aspect ratios: max(factor, ...) can overshoot
        if max_tokens is not None and tokens > max_tokens:
            raise InvalidInput(f"a {width}x{height} image cannot fit in {max_tokens} visual tokens")
        grid = (1, h // self.patch_size, w // self.patch_size)
        return VisualTokenPlan(width, height, w, h, tokens, 1, grid, max_pixels=cap)


@dataclass(frozen=True, slots=True)
class FixedVisualTokenizer:
    """PaliGemma / SigLIP: every image is resized to ``image_size`` squared; a fixed count."""

    image_size: int = 224
    patch_size: int = 14
    family: str = "paligemma"

    @property
    def min_tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    def plan(self, width: int, height: int, max_tokens: int | None = None) -> VisualTokenPlan:
        if min(width, height) <= 0:
            raise InvalidInput(f"image has no pixels ({width}x{height})")
        tokens = self.min_tokens
        if max_tokens is not None and tokens > max_tokens:
            raise InvalidInput(f"this model always costs {tokens} visual tokens per image; budget {max_tokens}")
        return VisualTokenPlan(width, height, self.image_size, self.image_size, tokens)


def _rescale_to_max_len(height: int, width: int, max_len: int) -> tuple[int, int]:
    aspect_ratio = width / height
    if width >= height:
        width = max_len
        height = int(width / aspect_ratio)
        height += height % 2
    else:
        height = max_len
        width = int(height * aspect_ratio)
        width += width % 2
    return max(height, 1), max(width, 1)


def _scale_below(height: int, width: int, max_len: int) -> tuple[int, int]:
    aspect_ratio = width / height
    if width >= height and width > max_len:
        width = max_len
        height = int(width / aspect_ratio)
    elif height > width and height > max_len:
        height = max_len
        width = int(height * aspect_ratio)
    return max(height, 1), max(width, 1)


def _multiple_of_tile(height: int, width: int, tile: int) -> tuple[int, int]:
    """Idefics3 ``resize_for_vision_encoder`` (the preprocessing path, not the estimate helper)."""
    aspect_ratio = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = math.ceil(int(width / aspect_ratio) / tile) * tile
    else:
        height = math.ceil(height / tile) * tile
        width = math.ceil(int(height * aspect_ratio) / tile) * tile
    return height, width


@dataclass(frozen=True, slots=True)
class TiledVisualTokenizer:
    """Idefics3 / SmolVLM: longest edge to ``longest_edge``, split into ``tile`` squares + 1 global."""

    longest_edge: int = 4 * 364
    tile: int = 364
    image_seq_len: int = 169
    max_image_size: int = 4096  # transformers' MAX_IMAGE_SIZE of Idefics3
    family: str = "idefics3"

    @property
    def min_tokens(self) -> int:
        return self.image_seq_len

    def tiles_for(self, width: int, height: int, longest_edge: int) -> tuple[int, int, int]:
        """``(tiles fed to the encoder, rows, cols)`` exactly as the image processor splits."""
        h, w = _rescale_to_max_len(height, width, longest_edge)
        h, w = _scale_below(h, w, self.max_image_size)
        h, w = _multiple_of_tile(h, w, self.tile)
        if h > self.tile or w > self.tile:
            rows, cols = math.ceil(h / self.tile), math.ceil(w / self.tile)
            return rows * cols + 1, rows, cols
        return 1, 0, 0

    def plan(self, width: int, height: int, max_tokens: int | None = None) -> VisualTokenPlan:
        if min(width, height) <= 0:
            raise InvalidInput(f"image has no pixels ({width}x{height})")
        edge = self.longest_edge
        while True:
            tiles, _, _ = self.tiles_for(width, height, edge)
            tokens = tiles * self.image_seq_len
            if max_tokens is None or tokens <= max_tokens or edge <= self.tile:
                break
            edge = max(self.tile, edge - self.tile)
        if max_tokens is not None and tokens > max_tokens:
            raise InvalidInput(f"{max_tokens} visual tokens is below this model's minimum ({tokens})")
        return VisualTokenPlan(width, height, self.tile, self.tile, tokens, tiles, longest_edge=edge)


def tokenizer_for(family: str, *, min_pixels: int = 56 * 56, max_pixels: int = 1280 * 28 * 28) -> VisualTokenizer:
    """The accounting of a family name (``model_type`` of a transformers config)."""
    if family in ("qwen2_vl", "qwen2_5_vl"):
        return QwenVisualTokenizer(min_pixels=min_pixels, max_pixels=max_pixels, family=family)
    if family in ("paligemma", "siglip"):
        return FixedVisualTokenizer()
    if family in ("idefics3", "smolvlm"):
        return TiledVisualTokenizer() if family == "idefics3" else TiledVisualTokenizer(4 * 512, 512, 64)
    raise InvalidInput(
        f"no visual-token accounting for {family!r}; allowed: qwen2_vl, qwen2_5_vl, "
        "paligemma, siglip, idefics3, smolvlm"
    )


def split_budget(n_images: int, budget: int, per_image_cap: int, min_per_image: int) -> tuple[int, int]:
    """``(images kept, max tokens per image)`` so that kept * per_image <= budget.

    Keeps the most images that each still get ``min_per_image`` tokens (callers keep the
    best-ranked ones), and gives each an equal share capped at ``per_image_cap``.
    """
    if n_images <= 0 or budget < min_per_image:
        return 0, 0
    kept = min(n_images, budget // min_per_image)
    return kept, min(per_image_cap, budget // kept)
