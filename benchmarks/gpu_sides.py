"""How benchmarks/gpu_check.py times a side: on batches already on the device, in 3 rounds
interleaved with the side it is compared with, the litebert step split into its phases.

- Batches: a side's warm-up and timed batches are built first, by the loader the Trainer
  uses (its workers, pinned memory on CUDA: train/feed.py), and copied to the device; only
  then does the timer start, so a step's time is the step's alone. The loader's own time
  per batch is reported beside it (data ms), to show whether it keeps up with the step.
- Rounds: after each side's warm-up, ROUNDS rounds, each of every side's timed steps in
  turn (ours, then theirs), so drift in the machine's speed hits both alike. A side's
  figure is the median over all its timed steps; its spread is the range of the rounds'
  medians, over that median.
- Peak memory: what the side holds once built and warmed up (its model, optimizer state,
  compiled code and prepared batches: the allocation that appeared while it was built),
  plus the most its steps of the first round allocate above what was held when they began.
  The other side's memory, held all along, is counted in neither.
- Split: with a PhaseTimer as Trainer.phase_hook, CUDA events (perf_counter on a CPU) at the
  step's boundaries, read after the step: copy to the device (next to nothing: the batch is
  there), forward + backward, gradient clipping, optimizer (schedule and zero_grad
  included). The split shown is the median step's (the lower median), beside its time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from common import peak_mb, reset_peak, resident_mb, synchronize

from litebert.padding import real_tokens
from litebert.train.flops import BatchFlops

Batch = dict[str, torch.Tensor]
Step = Callable[[Batch], int]  # trains one prepared batch, returns its real tokens

ROUNDS = 3
PHASES = {"copied": "copy", "backward": "fwd+bwd", "clipped": "clip", "stepped": "optimizer"}


def prepared(stream: Iterator[Batch], count: int,
             device: torch.device) -> tuple[list[Batch], float]:
    """The first `count` batches of `stream` (a loader) on the device, and the loader's ms
    per batch: from its first batch to its last over the batches between (its rate once its
    workers run), or the first's time when there is one."""
    start = time.perf_counter()
    work = [next(stream)]
    first = time.perf_counter()
    work += [next(stream) for _ in range(count - 1)]
    last = time.perf_counter()
    close = getattr(stream, "close", None)
    if close is not None:
        close()  # the loader's workers end here
    ms = (last - first) / (count - 1) if count > 1 else first - start
    on_device = [{k: v.to(device, non_blocking=True) for k, v in b.items()} for b in work]
    synchronize(device)
    return on_device, 1e3 * ms


class PhaseTimer:
    """Trainer.phase_hook: marks at the step's boundaries, no device sync; `read` (after the
    step has been synchronized) gives each phase's milliseconds."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.marks: list[tuple[str, object]] = []

    def _mark(self) -> object:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def begin(self) -> None:
        self.marks = [("start", self._mark())]

    def __call__(self, boundary: str) -> None:
        self.marks.append((boundary, self._mark()))

    def read(self) -> dict[str, float]:
        """This step's phases, ms (call after the device is synchronized)."""
        phases = {}
        for (_, a), (name, b) in zip(self.marks, self.marks[1:], strict=False):
            phases[PHASES[name]] = (a.elapsed_time(b) if self.cuda  # type: ignore[attr-defined]
                                    else 1e3 * (b - a))  # type: ignore[operator]
        self.marks = []
        return phases


@dataclass
class Side:
    """One timed side: its step, its prepared batches (warm-up first), and what it measured."""

    step: Step
    batches: list[Batch]
    data_ms: float
    flops: list[BatchFlops] | None = None  # per batch, where counted batch by batch
    timer: PhaseTimer | None = None
    owner: object = None  # what the step belongs to (a Trainer), released with the side
    first_s: float = 0.0  # the first step alone: compiling and first-use set-up included
    resident_mb: float = 0.0  # held once built and warmed up
    peak_mb: float | None = None
    rounds: list[list[float]] = field(default_factory=list)  # step seconds of each round
    tokens: list[int] = field(default_factory=list)
    splits: list[dict[str, float]] = field(default_factory=list)  # per timed step, with a timer


def ready(make: Callable[[], Side], warmup: int, device: torch.device) -> Side:
    """make() a side and warm it up: `warmup` steps, the first timed alone (first_s); notes
    the memory it holds then."""
    synchronize(device)
    before = resident_mb(device)
    side = make()
    synchronize(device)
    start = time.perf_counter()
    side.step(side.batches[0])
    synchronize(device)
    side.first_s = time.perf_counter() - start
    for batch in side.batches[1:warmup]:
        side.step(batch)
    synchronize(device)
    side.resident_mb = resident_mb(device) - before
    return side


def one_round(side: Side, warmup: int, device: torch.device) -> None:
    """The side's timed steps, once; the first round also measures its peak memory."""
    synchronize(device)
    reset_peak(device)
    held = resident_mb(device)
    times = []
    for batch in side.batches[warmup:]:
        synchronize(device)
        start = time.perf_counter()
        if side.timer:  # inside the timed span: the phases add up to at most the step
            side.timer.begin()
        side.tokens.append(side.step(batch))
        synchronize(device)
        times.append(time.perf_counter() - start)
        if side.timer:
            side.splits.append(side.timer.read())
    if side.peak_mb is None:
        side.peak_mb = side.resident_mb + max(peak_mb(device) - held, 0.0)
    side.rounds.append(times)


def interleaved_rounds(sides: list[Side], warmup: int, device: torch.device) -> None:
    """ROUNDS rounds, each every side's timed steps in turn."""
    for _ in range(ROUNDS):
        for side in sides:
            one_round(side, warmup, device)


def restart(side: Side) -> None:
    """Forget a side's rounds (it is compared again, with another side), keep its peak."""
    side.rounds, side.tokens, side.splits = [], [], []


@dataclass
class Timing:
    """What a side's rounds give."""

    per_s: float  # tokens (or examples) a second: mean per step over the median step
    step_s: float  # the median step
    spread: float  # (max - min) of the rounds' medians, over the median
    compile_s: float  # the first step less a median one
    model_flops_s: float | None  # per-batch model FLOPs (mean) over the median step
    hardware_flops_s: float | None
    padding: float | None  # the computed positions that hold no real token, all batches
    split: dict[str, float] | None  # the phases (ms) of the median step (median_low)
    split_step_ms: float  # that step's time


def timing(side: Side, warmup: int) -> Timing:
    every = [t for times in side.rounds for t in times]
    median = statistics.median(every)
    medians = [statistics.median(times) for times in side.rounds]
    per_step = statistics.mean(side.tokens)
    model = hardware = padding = None
    if side.flops:
        counted = side.flops[warmup:]
        model = statistics.mean(f.model for f in counted) / median
        hardware = statistics.mean(f.hardware for f in counted) / median
        padding = 1 - sum(f.tokens for f in counted) / sum(f.positions for f in counted)
    elif "input_ids" in side.batches[-1]:
        masks = [real_tokens(b) for b in side.batches[warmup:]]
        padding = 1 - sum(int(m.sum()) for m in masks) / sum(m.numel() for m in masks)
    # The split of one step, the median one: its phases add up to at most its time.
    middle = every.index(statistics.median_low(every))
    split = side.splits[middle] if side.splits else None
    return Timing(per_step / median, median, (max(medians) - min(medians)) / median,
                  max(side.first_s - median, 0.0), model, hardware, padding, split,
                  1e3 * every[middle])
