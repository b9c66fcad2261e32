"""The max-batch check of benchmarks/gpu_check.py: the largest micro-batch of albert-base at
512 tokens whose training step fits in GPU memory, without and with activation checkpointing
(--activation-checkpointing; litebert.model.checkpointing).

The step is the model's eager forward and backward (MLM at 15% of the positions + SOP, the
run's autocast): compiling would cost a graph per batch size tried, and the optimizer adds
little (albert-base holds 12M parameters). The search doubles the batch from 32 until a step
runs out of memory (torch.OutOfMemoryError), then bisects between the last that fit and the
first that did not, to within 1/16 of it; every try is freed before the next. A time cap
(CAP_S for both sides together) stops the search early, and the row says so.

The dry run (CPU) runs the same search under an artificial memory limit: a step may save at
most DRY_SAVED_BYTES for its backward pass, counted by a saved-tensors hook that raises
torch.OutOfMemoryError past it. Checkpointed positions save through their own hook (the
innermost one counts), so checkpointing fits more there too; the row says it is a dry run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import torch
from common import autocast, peak_mb, reset_peak
from gpu_rows import Row, Settings, free

from litebert.config import ModelConfig
from litebert.model import EncoderForPreTraining, set_activation_checkpointing

CAP_S = 60.0  # both sides' searches together, of the check's budget
LARGEST = 1 << 16  # no batch beyond this is tried
DRY_SAVED_BYTES = 3 << 20  # the dry run's stand-in for GPU memory
MASKED_SHARE = 0.15  # MLM positions predicted per row


def largest_fitting(fits: Callable[[int], bool], start: int,
                    deadline: float) -> tuple[int, int | None, bool]:
    """(largest batch that fit, smallest that did not or None, whether the search ended
    before `deadline` (time.perf_counter)): doubling from `start`, then bisecting to within
    1/16 of the largest. 0 when not even `start` fits."""
    fit, failed = 0, None
    batch = start
    while batch <= LARGEST:  # doubling
        if time.perf_counter() > deadline:
            return fit, failed, False
        if not fits(batch):
            failed = batch
            break
        fit, batch = batch, 2 * batch
    while failed is not None and fit and failed - fit > max(1, fit // 16):  # bisecting
        if time.perf_counter() > deadline:
            return fit, failed, False
        middle = (fit + failed) // 2
        if fits(middle):
            fit = middle
        else:
            failed = middle
    return fit, failed, True


@contextlib.contextmanager
def saved_bytes_cap(limit: int | None, model: torch.nn.Module) -> Iterator[None]:
    """Within: torch.OutOfMemoryError once the activations saved for backward pass `limit`
    bytes (None: no limit, nothing hooked); `model`'s parameters and views of them are
    held anyway, so they do not count."""
    if limit is None:
        yield
        return
    held = {p.untyped_storage().data_ptr() for p in model.parameters()}
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        if t.untyped_storage().data_ptr() in held:
            return t
        total += t.numel() * t.element_size()
        if total > limit:
            raise torch.OutOfMemoryError(f"dry run: over {limit} bytes saved for backward")
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield


def pretraining_step(model: EncoderForPreTraining, s: Settings, seq: int) -> Callable[[int], None]:
    """One forward and backward of `model` on a random batch of `batch` full rows of `seq`
    tokens (no padding: FlashAttention's path on CUDA), its gradients dropped after."""
    V, P = model.config.vocab_size, max(1, round(MASKED_SHARE * seq))
    amp = autocast(s.device, s.precision)
    cap = DRY_SAVED_BYTES if s.dry else None

    def step(batch: int) -> None:
        ids = torch.randint(5, V, (batch, seq), device=s.device)  # (B, T)
        positions = torch.rand(batch, seq, device=s.device).argsort(dim=1)[:, :P]  # (B, P)
        with saved_bytes_cap(cap, model), amp:
            loss = model(ids, masked_positions=positions, masked_ids=ids.gather(1, positions),
                         sentence_order_label=torch.randint(0, 2, (batch,),
                                                            device=s.device)).loss
            loss.backward()
        model.zero_grad(set_to_none=True)
    return step


def fits_in_memory(step: Callable[[int], None], s: Settings,
                   peaks: dict[int, float]) -> Callable[[int], bool]:
    """fits(batch): whether step(batch) ran without running out of memory; each try freed
    before the next, the peak of each that fit kept in `peaks`."""
    def fits(batch: int) -> bool:
        reset_peak(s.device)
        ok = True
        try:
            step(batch)
        except torch.OutOfMemoryError:
            ok = False  # the exception and its frames are gone after this block
        if ok:
            peaks[batch] = peak_mb(s.device)
        free()
        return ok
    return fits


def search_row(s: Settings, model: EncoderForPreTraining, preset: str, seq: int,
               variant: str, deadline: float) -> Row:
    peaks: dict[int, float] = {}
    began = time.perf_counter()
    fit, failed, finished = largest_fitting(fits_in_memory(pretraining_step(model, s, seq), s,
                                                           peaks), s.size(32, 1), deadline)
    limit = f"out of memory at {failed}" if failed else f"none failed up to {LARGEST}"
    what = (f"{preset}, {seq} tokens, eager forward + backward "
            f"({s.precision}): largest micro-batch, doubling from {s.size(32, 1)} then "
            f"bisecting to 1/16; {limit}{'' if finished else '; stopped by the time cap'}")
    if s.dry:
        what = (f"dry run: {DRY_SAVED_BYTES >> 20} MiB saved for backward stands for GPU "
                f"memory; {what}")
    return Row("max-batch", variant, what, unit="seqs", litebert=float(fit),
               peak_mb=peaks.get(fit), seconds=time.perf_counter() - began)


def max_batch(s: Settings) -> list[Row]:
    """Without, then with, activation checkpointing; CAP_S for both."""
    preset, seq = s.size("albert-base", "tiny"), s.size(512, 32)
    # The dry run's model: tiny with 2 layers and 1,000 words, so that each try takes a
    # CPU's fraction of a second.
    shrink = s.size({}, {"num_hidden_layers": 2, "vocab_size": 1000})
    config = ModelConfig.from_preset(preset, **shrink)
    deadline = time.perf_counter() + CAP_S
    rows = []
    for variant, checkpointing in (("eager", False), ("eager, activation checkpointing", True)):
        torch.manual_seed(0)
        model = EncoderForPreTraining(config).to(s.device).train()
        set_activation_checkpointing(model, checkpointing)
        side_deadline = deadline if checkpointing else time.perf_counter() + CAP_S / 2
        rows.append(search_row(s, model, preset, seq, variant, side_deadline))
        del model
        free()
    if rows[0].litebert:
        rows[1].what += f"; {rows[1].litebert / rows[0].litebert:.2f}x the batch without"
    return rows
