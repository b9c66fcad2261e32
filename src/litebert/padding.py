"""Padding rows into a batch: the one helper for pre-training, fine-tuning and multiple choice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

# What each model input is padded with; any other sequence field gets 0.
DEFAULT_FILL = {"input_ids": 0, "token_type_ids": 0, "attention_mask": 0, "labels": -100}


def _is_sequence(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.ndim >= 1
    return isinstance(value, (list, tuple))


def _nested(value: Any) -> bool:
    """A row field holding one sequence per choice (multiple choice): (C, T)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.ndim == 2
    return len(value) > 0 and _is_sequence(value[0])


def longest_row(rows: Sequence[Mapping[str, Any]], key: str) -> int:
    values = [r[key] for r in rows]
    if _nested(values[0]):
        return max(len(seq) for v in values for seq in v)
    return max(len(v) for v in values)


def pad_batch(rows: Sequence[Mapping[str, Any]], pad_id: int = 0, multiple_of: int = 8,
              fill: Mapping[str, int] | None = None, side: str = "right",
              width: int | None = None) -> dict[str, torch.Tensor]:
    """Pad every sequence field of `rows` to one width on `side`; stack the scalar fields.

    The width is `width` when given (one shape for every batch of a data directory, so a
    compiled step does not recompile; a longer row is a ValueError), else the longest
    `input_ids` of the batch rounded up to `multiple_of` (kinder to matmul kernels). A field
    with one sequence per choice gives (B, C, W); other sequence fields give (B, W); scalars
    give (B,) (float if the values are floats, else long).
    `input_ids` is filled with `pad_id`, labels with -100, other fields as `fill` says or 0
    (XLNet's token types: its pad type 3). side "left" puts the padding first (XLNet: every
    row then ends in its <cls>); scalar positions (e.g. start_positions) are not shifted.
    """
    if side not in ("left", "right"):
        raise ValueError(f"pad_batch: side={side!r}; use 'left' or 'right'")
    fills = {**DEFAULT_FILL, "input_ids": pad_id, **(fill or {})}
    longest = longest_row(rows, "input_ids")
    if width is None:
        width = -(-longest // multiple_of) * multiple_of
    elif longest > width:
        raise ValueError(f"pad_batch: a row of {longest} tokens does not fit width={width}")
    out: dict[str, torch.Tensor] = {}
    for key in rows[0]:
        values = [r[key] for r in rows]
        if not _is_sequence(values[0]):
            floating = isinstance(values[0], float) or (
                isinstance(values[0], torch.Tensor) and values[0].is_floating_point())
            out[key] = torch.tensor([float(v) if floating else int(v) for v in values],
                                    dtype=torch.float32 if floating else torch.long)
            continue
        nested = _nested(values[0])
        shape = (len(rows), len(values[0]), width) if nested else (len(rows), width)
        block = torch.full(shape, fills.get(key, 0), dtype=torch.long)
        for i, value in enumerate(values):
            for j, seq in enumerate(value if nested else [value]):
                target = block[i, j] if nested else block[i]
                span = slice(width - len(seq), width) if side == "left" else slice(0, len(seq))
                target[span] = torch.as_tensor(seq, dtype=torch.long)
        out[key] = block
    return out


def real_tokens(batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """(B, T) long, 1 = a real token: the batch's attention_mask, or all ones where the
    collator left it out because no row is padded (the host decides that, so the model's
    attention takes its unmasked path without reading the mask back from the device)."""
    mask = batch.get("attention_mask")
    return torch.ones_like(batch["input_ids"]) if mask is None else mask
