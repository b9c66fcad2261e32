"""Length-bucketed batches for fine-tuning and evaluation: little padding, still shuffled.

`pad_for` turns the rows of one batch into tensors padded as the tokenizer's model reads them
(litebert.padding.pad_batch: XLNet's on the left, with its pad token type); `left_padding`
says how far that moved each row, for the positions a task counts in its own rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from litebert.padding import pad_batch as pad  # noqa: F401 (the batch helper of tasks)

POOL = 50  # batches per sorting pool: long enough to group lengths, short enough to mix


def pad_for(tokenizer, rows: Sequence[Mapping[str, Any]],
            fill: Mapping[str, int] | None = None) -> dict[str, torch.Tensor]:
    """`rows` padded with the tokenizer's pad id (0 when it has none), on its padding_side,
    token types with its pad_token_type_id; `fill` adds fields' own pad values."""
    return pad(rows, tokenizer.pad_token_id or 0, side=tokenizer.padding_side,
               fill={"token_type_ids": tokenizer.pad_token_type_id, **(fill or {})})


def left_padding(tokenizer, lengths: Sequence[int], multiple_of: int = 8) -> list[int]:
    """Per row of lengths `lengths`, the pad tokens pad_for puts before it: 0 when the
    tokenizer pads on the right."""
    if tokenizer.padding_side != "left":
        return [0] * len(lengths)
    width = -(-max(lengths) // multiple_of) * multiple_of
    return [width - n for n in lengths]


def length_batches(lengths, batch_size: int, rng: np.random.Generator | None
                   ) -> list[np.ndarray]:
    """Indices grouped into batches of similar length, each an int64 array (a view of one
    order array: 8 bytes a row, where lists of Python ints cost about 36 at 10M rows).

    Training (rng given): shuffle, sort within pools of POOL batches by length, cut into
    batches, shuffle the batches; every example once per epoch. Evaluation (rng None):
    sorted by length, in order.
    """
    lengths = np.asarray(lengths)
    if rng is None:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    order = rng.permutation(len(lengths))
    pool = POOL * batch_size  # a multiple of batch_size: batches never straddle two pools
    for start in range(0, len(order), pool):
        chunk = order[start:start + pool]
        order[start:start + pool] = chunk[np.argsort(lengths[chunk], kind="stable")]
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]
