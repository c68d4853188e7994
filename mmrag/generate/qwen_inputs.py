"""Placeholder-embedded visual tokens for the Qwen2-VL family: pure tensor functions.

The prompt holds ``<|image_pad|>`` repeated ``tokens`` times per image (exactly as the processor
expands it). Vision features, fresh or from the encoder cache, replace the text embeddings at
those positions, and 3-D M-RoPE position ids come from the model's own ``get_rope_index`` — with
both, the logits equal the processor + ``pixel_values`` path bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def expand_image_placeholders(prompt: str, image_token: str, counts: Sequence[int]) -> str:
    """Replace the i-th single ``image_token`` of a chat-templated prompt by ``counts[i]`` copies."""
    parts = prompt.split(image_token)
    if len(parts) - 1 != len(counts):
        raise ValueError(f"prompt has {len(parts) - 1} image placeholders for {len(counts)} images")
    out = [parts[0]]
    for count, rest in zip(counts, parts[1:], strict=True):
        out.append(image_token * count + rest)
    return "".join(out)


def scatter_image_features(
    inputs_embeds: torch.Tensor, input_ids: torch.Tensor, image_token_id: int, features: torch.Tensor
) -> torch.Tensor:
    """Place ``features`` (N, H) at the N image-token positions of ``inputs_embeds`` (B, L, H)."""
    mask = input_ids == image_token_id  # (B, L)
    n = int(mask.sum())
    if n != features.shape[0]:
        raise ValueError(f"{n} image placeholder tokens but {features.shape[0]} feature rows")
    mask3 = mask.unsqueeze(-1).expand_as(inputs_embeds)  # (B, L, H)
    return inputs_embeds.masked_scatter(mask3, features.to(inputs_embeds.dtype))


def mrope_position_ids(
    model: Any,
    input_ids: torch.Tensor,
    image_token_id: int,
    grids: Sequence[tuple[int, int, int]],
) -> tuple[torch.Tensor, int]:
    """``(position_ids (3, 1, L), next text position)`` for one unpadded sequence (1, L)."""
    length = input_ids.shape[1]
    if not grids:  # text only: 1-D positions on all three axes
        pos = torch.arange(length, device=input_ids.device).view(1, 1, -1).expand(3, 1, -1)
        return pos, length
    mm_types = (input_ids == image_token_id).to(torch.int32)  # (1, L): 1 = image token
    grid_thw = torch.tensor(list(grids), dtype=torch.long, device=input_ids.device)  # (n_images, 3)
    attention = torch.ones_like(input_ids)
    pos, _ = model.model.get_rope_index(
        input_ids, mm_token_type_ids=mm_types, image_grid_thw=grid_thw, attention_mask=attention
    )
    return pos, int(pos.max()) + 1
