"""When the Trainer's checkpoints are written and made visible: at most one in flight.

Synchronous (the default), save() returns once the checkpoint is in place. With
`--async-save`, save() returns once the model and optimizer are copied to host memory; a
thread writes the copy while training goes on, and the commit (checksums, state.json, the
rename that makes the checkpoint visible, pruning) follows on the main thread once every
rank's write has finished: at the first step that settles its counters after that (log,
evaluation, checkpoint steps), before the next save, at the end of the run, and when the
run stops on an error. The commit is a collective, so it runs only where every rank is at
the same point.

The trade-off: a crash (kill -9, a lost node) while a checkpoint is in flight loses that
checkpoint, never the one before it, which stays intact: `--resume auto` starts there and
repeats the steps between the two, which a synchronous run would have had saved. In
exchange the steps do not wait for the disk; the price in memory is a second copy of the
model and optimizer state in host memory while it is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from litebert.distributed import DistInfo, all_reduce_sum
from litebert.train import checkpoint
from litebert.train.run_config import PretrainConfig
from litebert.train.state import start_checkpoint


class CheckpointSaver:
    """Saves the Trainer's parts under `run_dir`, synchronously or (cfg.async_save) not."""

    def __init__(self, run_dir: Path, cfg: PretrainConfig, info: DistInfo):
        self.run_dir, self.cfg, self.info = run_dir, cfg, info
        self.pending: checkpoint.Pending | None = None
        # The background writes' own group (gloo: host tensors): their collectives run in a
        # thread, and on training's group they could interleave with its all-reduces in a
        # different order on different ranks. Made here, where every rank passes together.
        self.group = (dist.new_group(backend="gloo")
                      if cfg.async_save and dist.is_initialized() else None)

    def save(self, model, optimizer, scheduler, state: dict[str, Any],
             objective_state: dict[str, torch.Tensor]) -> None:
        """Checkpoint the run at state["step"] (every rank, at the same step); the one still
        in flight, if any, is committed first."""
        self.wait()
        self.pending = start_checkpoint(self.run_dir, model, optimizer, scheduler, self.cfg,
                                        self.info, state, objective_state,
                                        background=self.cfg.async_save, group=self.group)
        if not self.cfg.async_save:
            self.wait()

    def wait(self) -> Path | None:
        """Commit the checkpoint in flight, waiting for its writes (a collective: every rank
        calls it at the same point); returns its path, None when there was none."""
        pending, self.pending = self.pending, None
        return checkpoint.commit(pending) if pending is not None else None

    def commit_if_written(self) -> None:
        """Commit the checkpoint in flight if every rank has written its share (a collective,
        for a step where every rank syncs with the device anyway); otherwise leave it."""
        if self.pending is None:
            return
        done = torch.tensor([float(self.pending.written())], device=self.info.device)
        if int(all_reduce_sum(done).item()) == self.info.world_size:
            self.wait()

    def stop_after_error(self) -> None:
        """After an error that may be this rank's alone: one process commits the checkpoint
        in flight (there is nobody to wait for); with several, it is left uncommitted (its
        `.tmp` is cleared by a later save), since waiting in a collective for ranks that are
        elsewhere could hang. The checkpoint before it is intact either way."""
        if self.info.world_size == 1:
            self.wait()
        self.pending = None
