"""Where and how a fine-tuning command computes: the device, the ranks, the precision and
whether the model is compiled, with the helpers that split work across ranks.

One process per device under torchrun (`torchrun --nproc-per-node N -m litebert.cli
finetune ...`), else one process on the GPU if there is one, else on the CPU. The results
are one process's:

- training: every rank draws the same global batch (the same seed, the same batches) and
  runs its rows ids[rank::world]; `rows_of` gives each rank the weight that turns its mean
  loss into its share of the global batch's mean, so DDP's average of the gradients is the
  gradient of one process over the whole batch;
- evaluation: the batches one process would run, in its order; rank r runs batches r, r +
  world, ... and `evaluate_batches` gathers their outputs back into that order, so
  predictions and metrics are one process's.

Shapes: the batches of a run share one size (training: `rank_batch_size` rows, filled up
with a task's dummy rows where it has them; evaluation: its largest batch's), and a compiled
run pads each to a width bucket (`bucket_limit`, batching.py), so that it compiles one
static graph per (width, mode).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch
from torch import nn

from litebert.distributed import (
    DistInfo,
    all_gather_objects,
    barrier,
    init_distributed,
    unwrap,
    wrap,
)
from litebert.model.checkpointing import set_activation_checkpointing
from litebert.tasks.batching import pad_rows
from litebert.train.compiling import (
    compile_in_place,
    compile_mode,
    replays_cuda_graphs,
    resolved_compile,
)
from litebert.train.precision import allow_tf32, autocast, resolved_precision

if TYPE_CHECKING:
    from litebert.tasks.base import FinetuneConfig

ModuleT = TypeVar("ModuleT", bound=nn.Module)
RowIds = Sequence[int] | np.ndarray  # a batch's row indices (batching.length_batches: arrays)


def finetune_compiles(setting: bool | str | None, device: torch.device) -> bool:
    """Whether a fine-tuning run compiles. auto (None) is eager on every device, unlike
    pre-training: on an H200, compiled albert-base fine-tuning ran 16 SST-2 examples/s at a
    steady step against eager's 971, as its length-bucketed widths kept costing compile
    time (docs/finetuning.md). Its shapes are bounded since (width buckets, one batch
    size); auto stays eager until the GPU check measures that. True or a mode compiles
    where asked."""
    return setting is not None and resolved_compile(setting, device)


@dataclass
class Runtime:
    info: DistInfo  # rank, world size, device
    precision: str  # fp32 | bf16 | fp16, as resolved for the device
    compiled: bool
    mode: str | None  # torch.compile's mode (None: its default)
    amp: contextlib.AbstractContextManager[Any]  # the forward pass's autocast (or nothing)
    scaler: torch.amp.GradScaler | None  # fp16's loss scaling, else None
    activation_checkpointing: bool = False  # each layer position recomputed in backward

    @classmethod
    def from_config(cls, cfg: FinetuneConfig) -> Runtime:
        """Join torchrun's process group if there is one; one Runtime per training run (a
        GradScaler keeps state from step to step)."""
        info = init_distributed()
        amp, scaler = autocast(cfg.precision, info.device)
        allow_tf32(info.device)
        return cls(info=info, precision=resolved_precision(cfg.precision, info.device),
                   compiled=finetune_compiles(cfg.compile, info.device),
                   mode=compile_mode(cfg.compile), amp=amp, scaler=scaler,
                   activation_checkpointing=cfg.activation_checkpointing)

    @property
    def cuda_graphs(self) -> bool:
        """Whether the compiled model replays CUDA graphs (compile: reduce-overhead or
        max-autotune): the loop then marks where each step begins."""
        return self.compiled and replays_cuda_graphs(self.mode)

    @property
    def fixed_shapes(self) -> bool:
        """Whether batches take bounded widths (batching.width_buckets): a compiled run's,
        so that it compiles a known few graphs; an eager run pads no wider than it must."""
        return self.compiled

    def bucket_limit(self, max_length: int) -> int | None:
        """What an adapter gives batching.pad_for as max_length: the run's max_seq_length
        when shapes are fixed, else None (each batch as wide as its longest row)."""
        return max_length if self.fixed_shapes else None

    @property
    def device(self) -> torch.device:
        return self.info.device

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that logs and writes files."""
        return self.info.is_main

    def describe(self) -> str:
        ranks = f" x {self.info.world_size} processes" if self.info.distributed else ""
        how = f", compiled{f' ({self.mode})' if self.mode else ''}" if self.compiled else ""
        return f"{self.device.type}{ranks}, {self.precision}{how}"

    # ---- the model ---------------------------------------------------------------------

    def place(self, model: ModuleT) -> ModuleT:
        """The model on the device, compiled in place when the run compiles (its state-dict
        keys stay), its encoders checkpointing their layers when the run asks. Build the
        optimizer after this: it then picks fused AdamW for the device."""
        model = model.to(self.device)
        set_activation_checkpointing(model, self.activation_checkpointing)
        if self.compiled:
            # Static shapes: the batches' widths are a few buckets and their sizes constant
            # (see the module docstring), so each (width, mode) is one graph, and none is
            # traced with symbolic sizes.
            compile_in_place(model, self.mode, dynamic=False)
        return model

    def wrap(self, model: nn.Module) -> nn.Module:
        """DDP under torchrun (after compiling, as torch advises); the model itself else.

        DDP is told to find unused parameters: a fine-tuning head can leave some of a
        pre-trained model out of its loss (XLNet's mask_emb, the query stream's input in
        pre-training), and DDP would otherwise wait for their gradients forever. They keep
        no gradient, so AdamW leaves them as one process does."""
        return wrap(model, self.info, fsdp=False, find_unused=True)

    def barrier(self) -> None:
        """Wait for every rank, e.g. until rank 0 has written what the others read."""
        barrier()

    # ---- training ----------------------------------------------------------------------

    def rows_of(self, batch_ids: RowIds) -> tuple[list[int], float]:
        """This rank's rows of a global batch and their weight (see rank_rows)."""
        return rank_rows(batch_ids, self.info.rank, self.info.world_size)

    def sizes_of(self, batch_ids: RowIds) -> list[int]:
        """Every rank's number of rows of a global batch (see rank_sizes)."""
        return rank_sizes(len(batch_ids), self.info.world_size)

    def rank_batch_size(self, batch_size: int) -> int:
        """The rows every rank's share of a full global batch of `batch_size` is padded to
        (rank_rows gives some ranks one row fewer, and a short batch fewer still)."""
        return -(-batch_size // self.info.world_size)

    def to_device(self, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A collated batch on the device: through pinned memory on CUDA, so the copy does
        not wait for the host (the next step's collation overlaps it)."""
        if self.device.type != "cuda":
            return dict(batch)
        return {k: v.pin_memory().to(self.device, non_blocking=True) for k, v in batch.items()}

    # ---- evaluation --------------------------------------------------------------------

    def evaluate_batches(self, model: nn.Module, batches: Sequence[RowIds],
                         collate: Callable[[RowIds], Mapping[str, torch.Tensor]],
                         outputs: Callable[[Any], Sequence[torch.Tensor]]
                         ) -> list[list[np.ndarray]]:
        """outputs(model(**collate(ids))) for every batch of `batches`, as CPU arrays
        (floating point as float32), in the order of `batches`, on every rank: each rank
        runs its own batches (own_outputs), then they are gathered."""
        mine = self.own_outputs(model, batches, collate, outputs)
        return in_batch_order(all_gather_objects(mine), len(batches))

    def own_outputs(self, model: nn.Module, batches: Sequence[RowIds],
                    collate: Callable[[RowIds], Mapping[str, torch.Tensor]],
                    outputs: Callable[[Any], Sequence[torch.Tensor]]
                    ) -> dict[int, list[np.ndarray]]:
        """{batch index: outputs as CPU arrays} of this rank's batches (rank_batches), run
        with the model unwrapped from DDP (whose forward would wait for a backward), under
        autocast and without gradients. Each batch is run at the size of the largest, a short
        one filled up with copies of its first row whose outputs are dropped (batching.
        pad_rows): one shape for every batch of a width."""
        model = unwrap(model)
        size = max((len(ids) for ids in batches), default=0)
        mine: dict[int, list[np.ndarray]] = {}
        with torch.no_grad(), self.amp:
            for b in rank_batches(len(batches), self.info.rank, self.info.world_size):
                n = len(batches[b])
                out = model(**self.to_device(pad_rows(collate(batches[b]), size)))
                mine[b] = [to_host(x[:n]) for x in outputs(out)]  # (n, ...) each
        return mine


# ---- the arithmetic of the split (pure: rank and world given) -----------------------------

def rank_rows(batch_ids: RowIds, rank: int, world: int) -> tuple[list[int], float]:
    """Rank `rank`'s rows of a global batch, ids[rank::world], and the weight n_local /
    n_global of their mean loss in the batch's mean loss. Scaled by weight * world, each
    rank's loss makes DDP's average of the gradients the whole batch's gradient (every
    head's loss is a mean over its rows). A rank left without a row (a last batch smaller
    than the world) runs the batch's first row with weight 0: it must still join DDP's
    all-reduce, and adds nothing to it."""
    rows = list(batch_ids[rank::world])
    if not rows:
        return [batch_ids[0]], 0.0
    return rows, len(rows) / len(batch_ids)


def rank_sizes(rows: int, world: int) -> list[int]:
    """How many of a global batch's `rows` each rank holds as rank_rows splits them: 0 for a
    rank left without one (its stand-in row, of weight 0, is none of the batch's)."""
    return [len(range(rank, rows, world)) for rank in range(world)]


def rank_batches(n_batches: int, rank: int, world: int) -> range:
    """The indices of the evaluation batches rank `rank` runs: rank, rank + world, ..."""
    return range(rank, n_batches, world)


def in_batch_order(parts: Sequence[Mapping[int, Any]], n_batches: int) -> list[Any]:
    """Every rank's {batch index: outputs} merged into one list in batch order."""
    merged: dict[int, Any] = {}
    for part in parts:
        merged.update(part)
    missing = sorted(set(range(n_batches)) - set(merged))
    if missing:  # a rank that skipped a batch: a bug, never a short prediction file
        raise RuntimeError(f"evaluation: no outputs for batches {missing[:5]}")
    return [merged[b] for b in range(n_batches)]


def to_host(x: torch.Tensor) -> np.ndarray:
    """A CPU array; floating point as float32 (bf16 and fp16 outputs included)."""
    x = x.detach()
    return (x.float() if x.is_floating_point() else x).cpu().numpy()
