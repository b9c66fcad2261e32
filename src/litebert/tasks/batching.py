"""Length-bucketed batches for fine-tuning and evaluation: little padding, still shuffled."""

from __future__ import annotations

import numpy as np
import torch

POOL = 50  # batches per sorting pool: long enough to group lengths, short enough to mix


def length_batches(lengths, batch_size: int, rng: np.random.Generator | None) -> list[list[int]]:
    """Indices grouped into batches of similar length.

    Training (rng given): shuffle, sort within pools of POOL batches by length, cut into
    batches, shuffle the batches; every example once per epoch. Evaluation (rng None):
    sorted by length, in order.
    """
    lengths = np.asarray(lengths)
    if rng is None:
        order = np.argsort(lengths, kind="stable")
        return [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    order = rng.permutation(len(lengths))
    pool = POOL * batch_size
    batches = []
    for start in range(0, len(order), pool):
        chunk = order[start:start + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i:i + batch_size].tolist() for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def pad(rows: list[dict[str, list[int]]], pad_id: int = 0,
        multiple_of: int = 8) -> dict[str, torch.Tensor]:
    """Right-pad every list field of the rows to one width; scalar fields are stacked."""
    width = max(len(r["input_ids"]) for r in rows)
    width = -(-width // multiple_of) * multiple_of
    fill = {"input_ids": pad_id, "attention_mask": 0, "token_type_ids": 0}
    out = {}
    for key in rows[0]:
        values = [r[key] for r in rows]
        if isinstance(values[0], (list, tuple)):
            block = torch.full((len(rows), width), fill.get(key, 0), dtype=torch.long)
            for i, v in enumerate(values):
                block[i, :len(v)] = torch.as_tensor(v, dtype=torch.long)
            out[key] = block
        else:
            dtype = torch.float32 if isinstance(values[0], float) else torch.long
            out[key] = torch.tensor(values, dtype=dtype)
    return out
