"""Step time on one process of this CPU: forward + backward, and LAMB's update, apart.

Each row trains `steps` steps on a synthetic pre-training batch (rows.synthetic_batch) after
one warm-up step; the medians are reported, with the training FLOPs of the batch (MLM at its
targets + the encoder, litebert.model.counts) and the rate they imply. On one device ALBERT
and BERT of the same L and H do nearly the same FLOPs, so their forward + backward times
should match; what differs is the update, which touches every parameter.
"""

from __future__ import annotations

import logging
import statistics
import time

import torch

from litebert.studies.lite_vs_bert.rows import (
    fast_model,
    flops_per_sequence,
    row_config,
    synthetic_batch,
)
from litebert.train.lamb import Lamb, lamb_param_groups

log = logging.getLogger("litebert")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def step_times(name: str, batch: int, length: int, steps: int = 3, **overrides) -> dict:
    """Median seconds of forward + backward and of LAMB's step, after one warm-up step."""
    config = row_config(name, **overrides)
    model = fast_model(config).train()
    optimizer = Lamb(lamb_param_groups(model))
    data = synthetic_batch(config, batch, length)
    backward, update = [], []
    for step in range(steps + 1):
        b = _timed(lambda: model(**data).loss.backward())
        u = _timed(optimizer.step)
        optimizer.zero_grad(set_to_none=False)
        if step:  # the first step allocates gradients and LAMB's state
            backward.append(b)
            update.append(u)
    flops = flops_per_sequence(name, length, **overrides) * batch
    fb, up = statistics.median(backward), statistics.median(update)
    log.info("timing %s: %d x %d, forward+backward %.2fs, LAMB %.2fs", name, batch, length,
             fb, up)
    return {"row": name, "batch": batch, "length": length, "steps": steps,
            "threads": torch.get_num_threads(), "forward_backward_s": fb, "update_s": up,
            "step_s": fb + up, "flops": flops, "flops_per_s": flops / fb}
