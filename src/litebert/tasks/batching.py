"""Length-bucketed batches for fine-tuning and evaluation: little padding, still shuffled.

`pad` (litebert.padding.pad_batch) turns the rows of one batch into tensors."""

from __future__ import annotations

import numpy as np

from litebert.padding import pad_batch as pad  # noqa: F401 (the batch helper of tasks)

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
