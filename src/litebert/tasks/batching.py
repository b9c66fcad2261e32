"""Length-bucketed batches for fine-tuning and evaluation: little padding, still shuffled.

`pad_for` turns the rows of one batch into tensors padded as the tokenizer's model reads them
(litebert.padding.pad_batch: XLNet's on the left, with its pad token type); `left_padding`
says how far that moved each row, for the positions a task counts in its own rows.

Bounded shapes, for a compiled run (tasks/runtime.py decides): each batch's width is a width
bucket (`bucket_width`: powers of two from MIN_WIDTH, then max_seq_length), and `pad_rows`
fills a short batch up to the run's batch size with copies of its first row that no loss,
gradient or output counts. Eager runs keep each batch as wide as its longest row (rounded up
to 8): there a wider batch only costs time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from litebert.padding import longest_row
from litebert.padding import pad_batch as pad  # noqa: F401 (the batch helper of tasks)

POOL = 50  # batches per sorting pool: long enough to group lengths, short enough to mix
MULTIPLE_OF = 8  # an eager batch's width is its longest row rounded up to this
# The narrowest width bucket. Doubling from here gives few widths (5 up to 512 tokens, so 5
# compiled graphs per mode, each ~30 s of inductor's time on an H200) at most 2x the longest
# row; multiples of 64 would pad less but compile 8 graphs up to 512.
MIN_WIDTH = 32


def width_buckets(max_length: int) -> list[int]:
    """The widths a bounded run pads batches to, narrowest first: MIN_WIDTH, 2 * MIN_WIDTH,
    ... below max_length, then max_length rounded up to MULTIPLE_OF."""
    top = -(-max_length // MULTIPLE_OF) * MULTIPLE_OF
    widths, width = [], MIN_WIDTH
    while width < top:
        widths.append(width)
        width *= 2
    return [*widths, top]


def bucket_width(longest: int, max_length: int | None = None) -> int:
    """The width of a batch whose longest row has `longest` tokens: the narrowest bucket of
    width_buckets(max_length) that holds it; without max_length (eager), `longest` rounded up
    to MULTIPLE_OF, as is a row longer than every bucket (rows are cut to max_length first)."""
    tight = -(-longest // MULTIPLE_OF) * MULTIPLE_OF
    if max_length is None:
        return tight
    return next((w for w in width_buckets(max_length) if w >= longest), tight)


def pad_for(tokenizer, rows: Sequence[Mapping[str, Any]],
            fill: Mapping[str, int] | None = None,
            max_length: int | None = None) -> dict[str, torch.Tensor]:
    """`rows` padded with the tokenizer's pad id (0 when it has none), on its padding_side,
    token types with its pad_token_type_id; `fill` adds fields' own pad values. The width is
    bucket_width's for the longest row and `max_length` (None: tight)."""
    width = bucket_width(longest_row(rows, "input_ids"), max_length)
    return pad(rows, tokenizer.pad_token_id or 0, side=tokenizer.padding_side, width=width,
               fill={"token_type_ids": tokenizer.pad_token_type_id, **(fill or {})})


def left_padding(tokenizer, lengths: Sequence[int], max_length: int | None = None
                 ) -> list[int]:
    """Per row of lengths `lengths`, the pad tokens pad_for (given the same `max_length`)
    puts before it: 0 when the tokenizer pads on the right."""
    if tokenizer.padding_side != "left":
        return [0] * len(lengths)
    width = bucket_width(max(lengths), max_length)
    return [width - n for n in lengths]


def pad_rows(batch: Mapping[str, torch.Tensor], size: int,
             ignored: Mapping[str, int] | None = None) -> dict[str, torch.Tensor]:
    """A collated batch of n <= `size` rows filled up to `size` rows with copies of its first
    row (real tokens: attention has something to attend to), each field of `ignored` set in
    the copies to the value its loss ignores (labels -100), so the copies add nothing to a
    loss or its gradient. Evaluation gives no `ignored` and drops the copies' outputs."""
    n = len(batch["input_ids"])
    if n >= size:
        return dict(batch)
    out = {}
    for key, value in batch.items():
        copies = value[:1].expand(size - n, *value.shape[1:]).clone()  # (size - n, ...)
        if ignored and key in ignored:
            copies.fill_(ignored[key])
        out[key] = torch.cat([value, copies])
    return out


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
