"""One item's model inputs, and many items' inputs collated into one padded batch.

A processor or tokenizer returns a *batch*: a mapping of tensors with a leading batch axis
(``input_ids (B, L)``, ``attention_mask (B, L)``, ``pixel_values (B, ...)``, ...) plus plain values
(e.g. sentence-transformers' ``modality``). The embedding service prepares items request by
request, before they meet in a batch, so it needs the two pure functions here:

* :func:`split_rows` cuts a batch into one :data:`Row` per item (token tensors trimmed of their
  padding by ``attention_mask``);
* :func:`collate_rows` pads rows to a common shape and stacks them, as the processor would have
  for the whole batch: token tensors on the tokenizer's padding side with each key's pad value,
  other tensors (pixel patches) with zeros at the end of every axis that differs.

Padding is masked (attention) or cut off again (patches beyond a Qwen image's ``grid_thw``), so a
row's vectors do not depend on the rows it is batched with, up to float rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch

Row = dict[str, Any]
"""One item's inputs: tensors with a leading batch axis of 1, plus plain values shared by all rows."""

TOKEN_KEYS = frozenset({"input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids", "labels"})
"""Keys whose tensors run along the token axis (axis 1) and are padded on the tokenizer's side."""

PadSide = Literal["left", "right"]


def split_rows(batch: Mapping[str, Any]) -> list[Row]:
    """One row per item of a padded batch; token tensors keep only the positions where
    ``attention_mask`` is 1 (so a row carries no padding of the batch it came from)."""
    mask = batch["attention_mask"]  # (B, L)
    rows: list[Row] = []
    for i in range(mask.shape[0]):
        keep = mask[i].bool()  # (L,)
        row: Row = {}
        for key, value in batch.items():
            if not isinstance(value, torch.Tensor):
                row[key] = value
            elif key in TOKEN_KEYS:
                row[key] = value[i : i + 1, keep]  # (1, n_i, ...)
            else:
                row[key] = value[i : i + 1]
        rows.append(row)
    return rows


def _pad_tokens(t: torch.Tensor, length: int, value: float, side: PadSide) -> torch.Tensor:
    """Pad axis 1 of a (1, n, ...) token tensor to ``length``."""
    missing = length - t.shape[1]
    if missing == 0:
        return t
    pad = t.new_full((t.shape[0], missing, *t.shape[2:]), value)
    return torch.cat([pad, t] if side == "left" else [t, pad], dim=1)


def _pad_zeros(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Zero-pad every axis but the first of ``t`` at its end up to ``shape``."""
    if tuple(t.shape[1:]) == tuple(shape):
        return t
    out = t.new_zeros((t.shape[0], *shape))
    out[(slice(None), *(slice(0, n) for n in t.shape[1:]))] = t
    return out


def collate_rows(rows: Sequence[Row], *, pad_values: Mapping[str, float] | None = None,
                 padding_side: PadSide = "right") -> dict[str, Any]:
    """Rows (from :func:`split_rows` or one-item batches) stacked into one batch.

    ``pad_values``: per token key, the value padding gets (default 0; e.g. the tokenizer's pad id
    for ``input_ids``, -100 for ``labels``). Plain values are taken from the first row."""
    if not rows:
        raise ValueError("no rows to collate")
    pads = dict(pad_values or {})
    length = max(int(r["attention_mask"].shape[1]) for r in rows) if "attention_mask" in rows[0] else 0
    out: dict[str, Any] = {}
    for key, first in rows[0].items():
        if not isinstance(first, torch.Tensor):
            out[key] = first
            continue
        values = [r[key] for r in rows]
        if key in TOKEN_KEYS:
            values = [_pad_tokens(v, length, pads.get(key, 0), padding_side) for v in values]
        else:
            shape = [max(int(v.shape[d]) for v in values) for d in range(1, first.dim())]
            values = [_pad_zeros(v, shape) for v in values]
        out[key] = torch.cat(values)
    return out
