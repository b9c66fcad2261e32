"""The lite-vs-bert check of benchmarks/gpu_check.py: the training step of every row of the
lite-vs-bert study (ALBERT base to xxlarge, BERT base to xlarge) on the card, in the check's
precision, compiled on CUDA, at 512 tokens: tokens a second, MFU and peak memory
(max_memory_allocated), the GPU row beside the study's CPU step times
(litebert.studies.lite_vs_bert; docs/reproducing.md).

Each row: the study's pre-training model (MLM at 15% of the positions + sentence order, with
values drawn as the study draws them: rows.fast_model), LAMB with its compiled update, a
synthetic batch of MICRO_BATCH full rows; gpu_rows.timed's warm-up and timed steps. A row
that does not fit in memory says so and the next runs. The dry run (CPU) shrinks each row to
2 layers of width 64 and runs eager, so it proves the code path in seconds.
"""

from __future__ import annotations

import time

import torch
from common import autocast
from gpu_rows import Row, Settings, free, timed

from litebert.studies.lite_vs_bert.rows import (
    ROWS,
    fast_model,
    flops_per_sequence,
    row_config,
    small_overrides,
    synthetic_batch,
)
from litebert.train.lamb import Lamb, lamb_param_groups

MICRO_BATCH = 8
LENGTH = 512


def row_step(name: str, s: Settings, batch: int, length: int):
    """One training step of the row as a callable returning its tokens."""
    shrink = small_overrides(name) if s.dry else {}
    model = fast_model(row_config(name, **shrink)).to(s.device).train()
    optimizer = Lamb(lamb_param_groups(model))
    compiled = s.device.type == "cuda"
    if compiled:
        model.compile()
        optimizer.compile_update()
    data = {k: v.to(s.device) for k, v in synthetic_batch(model.config, batch, length).items()}
    amp = autocast(s.device, s.precision)

    def step() -> int:
        with amp:
            loss = model(**data).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return batch * length
    return step, compiled, shrink


def one_row(name: str, s: Settings) -> Row:
    batch, length = s.size(MICRO_BATCH, 2), s.size(LENGTH, 32)
    began = time.perf_counter()
    try:
        step, compiled, shrink = row_step(name, s, batch, length)
        measured = timed(step, s)
        del step  # the model and its graphs, before the next row
    except torch.OutOfMemoryError:
        free()
        return Row("lite-vs-bert", name, f"{batch} x {length}", status="out of memory",
                   seconds=time.perf_counter() - began)
    what = (f"{name}{' (2 layers, width 64)' if shrink else ''}, {batch} x {length}, "
            f"{'compiled' if compiled else 'eager'}, {s.precision}, LAMB; "
            f"synthetic rows, 15% MLM targets + sentence order")
    peak = s.peak()
    flops = flops_per_sequence(name, length, **shrink) / length
    mfu = measured.per_s * flops / 1e12 / peak if peak else None
    free()
    return Row("lite-vs-bert", name, what, litebert=measured.per_s, mfu=mfu,
               peak_mb=measured.peak_mb, compile_s=measured.compile_s,
               seconds=time.perf_counter() - began)


def lite_vs_bert_check(s: Settings) -> list[Row]:
    return [one_row(row.name, s) for row in ROWS]
