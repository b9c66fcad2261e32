"""Training state <-> checkpoints: what the Trainer saves, restores and exports.

Every run saves through torch.distributed.checkpoint (format "sharded"), one process, DDP or
FSDP alike: all ranks write in parallel (under FSDP their own shards; under DDP each a share
of the tensors all of them hold, each tensor once), and on resume each rank reads what it
needs straight into its existing parameters and optimizer state, with no second copy.
Keys are the model's own parameter names (torch's get_state_dict drops DDP's `module.`),
so a checkpoint resumes under one process, DDP or FSDP whatever wrote it, on any number of
processes, and `litebert export` reads it in one process without a process group.
Checkpoints of format "full" (earlier releases: model.safetensors + optimizer.pt) are still
read. The file layout and integrity checks are checkpoint.py's.
"""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    DictValueType,
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import FSDPModule

from litebert.config import ModelConfig
from litebert.data.loader import SAMPLER_VERSION
from litebert.distributed import DistInfo, agree_on_write
from litebert.objectives import Objective, resolve
from litebert.train import checkpoint
from litebert.train.feed import DataPosition
from litebert.train.optimizers import (
    OptimizerSpec,
    check_resumable,
    optimizer_spec,
    steps_on_device,
)
from litebert.train.run_config import PretrainConfig, RunConfigError, saved_run_config
from litebert.train.start_from import finish_export
from litebert.write_errors import explained_write


def is_fsdp(model: nn.Module) -> bool:
    """Sharded by fully_shard (which makes the module an FSDPModule; its parameters are
    not always DTensors: between forward and backward they can be unsharded ones)."""
    if not torch.distributed.is_initialized():
        return False  # FSDP needs a process group; and importing it costs a second
    return isinstance(model, FSDPModule)


def full_model_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The whole model's state dict on CPU; under FSDP gathered, complete on rank 0 only."""
    if is_fsdp(model):
        opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
        # Typed as any DCP value; a model's full state dict holds plain tensors only.
        return cast(dict[str, torch.Tensor], get_model_state_dict(model, options=opts))
    return getattr(model, "module", model).state_dict()


# ---- the run's counters ---------------------------------------------------------------------

@dataclass
class TrainState:
    """What a run has done so far: the Trainer's counters, saved in every checkpoint's
    state.json as the flat fields every release wrote (to_record / from_saved)."""

    step: int = 0  # optimizer steps taken (skipped ones included, see train/skips.py)
    position: DataPosition = field(default_factory=DataPosition)  # epoch, micro-batch
    skipped_steps: int = 0  # non-finite steps, their update left out
    nonfinite_in_row: int = 0  # the current run of them (max_nonfinite stops the run)
    tokens: int = 0  # real tokens of the logged steps, all ranks
    # Training time of the logged steps, resumes included (evaluations and checkpoints left
    # out): what a study reports as the run's minutes.
    seconds: float = 0.0
    # The shuffled order's version (data.loader.SAMPLER_VERSION); a resumed run keeps its
    # checkpoint's, so that it continues exactly.
    sampler_version: int = SAMPLER_VERSION

    def to_record(self) -> dict[str, Any]:
        """The state.json fields: the flat names and values every release wrote."""
        return {"step": self.step, "epoch": self.position.epoch, "batch": self.position.batch,
                "skipped_steps": self.skipped_steps, "nonfinite_in_row": self.nonfinite_in_row,
                "tokens": self.tokens, "seconds": self.seconds,
                "sampler_version": self.sampler_version}

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> TrainState:
        """The state of a checkpoint (restore_state's record); a field an older checkpoint
        lacks starts at its default."""
        known = {k: saved[k] for k in cls().to_record() if k in saved}
        position = DataPosition(known.pop("epoch", 0), known.pop("batch", 0))
        return cls(position=position, **known)


# ---- saving ---------------------------------------------------------------------------------

def save_checkpoint(run_dir: Path, model, optimizer, scheduler, cfg: PretrainConfig,
                    info: DistInfo, state: dict[str, Any],
                    objective_state: dict[str, torch.Tensor] | None = None) -> Path:
    """Checkpoint the run at state["step"]; every rank calls this at the same step, with its
    own objective state (Objective.state_dict)."""
    return checkpoint.commit(start_checkpoint(run_dir, model, optimizer, scheduler, cfg, info,
                                              state, objective_state))


def start_checkpoint(run_dir: Path, model, optimizer, scheduler, cfg: PretrainConfig,
                     info: DistInfo, state: dict[str, Any],
                     objective_state: dict[str, torch.Tensor] | None = None,
                     background: bool = False, group=None) -> checkpoint.Pending:
    """save_checkpoint up to the commit (checkpoint.commit makes it visible). `background`:
    the model and optimizer are copied to host memory and written by a thread, their
    collectives over `group` (see checkpoint.save_sharded_async); the rest is written now."""
    record = {**state, "config": cfg.to_dict(), "world_size": info.world_size,
              "format": "sharded"}

    def fill(directory: Path) -> Future | None:
        # a run saving before its first update
        ensure_optimizer_state(optimizer, optimizer_spec(cfg.optimizer))
        model_state, optim_state = get_state_dict(model, optimizer)  # this rank's, no copy
        both = {"model": model_state, "optimizer": optim_state}
        writing = None
        if background:
            writing = checkpoint.save_sharded_async(both, directory, group)
        else:
            checkpoint.save_sharded(both, directory)
        if info.is_main:
            checkpoint.save_pt(scheduler.state_dict(), directory / "scheduler.pt")
        checkpoint.save_objective_state(directory, info.rank, objective_state or {})
        return writing
    return checkpoint.start(run_dir, state["step"], fill, record, keep_last=cfg.keep_last)


# ---- resuming -------------------------------------------------------------------------------

def restore_state(model, optimizer, scheduler, cfg: PretrainConfig, info: DistInfo,
                  path: Path, position: bool = True) -> dict[str, Any]:
    """Load checkpoint `path` into the parts; returns its state.json with the data position
    ("batch") counted in this run's micro-batches and the order its data was read in
    ("sampler_version": 1 for checkpoints that predate the record, see
    litebert.data.loader.SAMPLER_VERSION), which the run keeps so that it continues exactly.
    position=False: the run reads other data from its first item (a new phase), at epoch 0
    and micro-batch 0 whatever the checkpoint's micro-batches were."""
    saved = checkpoint.verify(path)  # sizes; resolve_resume has compared the checksums
    check_resumable(saved.get("config", {}).get("optimizer"), cfg.optimizer, str(path))
    own = implementation(optimizer)
    if saved.get("format") == "sharded":
        _load_sharded(model, optimizer, optimizer_spec(cfg.optimizer), scheduler, path)
    else:
        _load_full(model, optimizer, scheduler, path)
    keep_implementation(optimizer, own)
    checkpoint.set_rng_state(checkpoint.load_rng(path, info.rank))
    batch = _batch_position(saved, cfg, info) if position else 0
    return {**saved, "batch": batch, **({} if position else {"epoch": 0}),
            "sampler_version": saved.get("sampler_version", 1),
            "objective_state": checkpoint.load_objective_state(path, info.rank)}


# How torch's optimizers run their update, chosen for this run's device, not part of the
# state: load_state_dict would take a checkpoint's (one written on a CPU, or by an older
# litebert, says fused None) and then run a fused optimizer's update on the slow path.
IMPLEMENTATION_KEYS = ("fused", "foreach", "capturable")


def implementation(optimizer: torch.optim.Optimizer) -> list[dict[str, Any]]:
    """Each param group's IMPLEMENTATION_KEYS, as this run built them."""
    return [{k: g[k] for k in IMPLEMENTATION_KEYS if k in g} for g in optimizer.param_groups]


def keep_implementation(optimizer: torch.optim.Optimizer, own: list[dict[str, Any]]) -> None:
    """Put this run's IMPLEMENTATION_KEYS back after loading a checkpoint's groups, and move
    step counts where a fused or capturable update reads them: onto the parameter's device."""
    for group, keys in zip(optimizer.param_groups, own, strict=True):
        group.update(keys)
        if not (group.get("fused") or group.get("capturable")):
            continue
        for p in group["params"]:
            step = optimizer.state.get(p, {}).get("step")
            if isinstance(step, torch.Tensor):
                optimizer.state[p]["step"] = step.to(p.device, torch.float32)


def ensure_optimizer_state(optimizer: torch.optim.Optimizer, spec: OptimizerSpec) -> None:
    """Give every parameter without optimizer state (none has any before the first step; a
    parameter that never had a gradient, such as the pooler and pair head of a run of MLM
    alone, never gets any) the state its first update would create, as its registry entry
    `spec` names it (OptimizerSpec.state: a step count of 0, zero moments or buffers),
    which that step would then find, unchanged. Without it get_state_dict creates the state
    itself with a step at learning rate 0 on zero gradients: a gradient-sized buffer more,
    and the optimizer's arithmetic, on every resume (and a step count of 1 at a save before
    any step was taken)."""
    for group in optimizer.param_groups:
        step_device = None if steps_on_device(spec, group) else "cpu"  # None: the parameter's
        for p in group["params"]:
            if p in optimizer.state:
                continue
            optimizer.state[p] = {
                name: torch.zeros((), device=step_device or p.device) if name == "step"
                else torch.zeros_like(p) for name in spec.state}


def _load_full(model, optimizer, scheduler, path: Path) -> None:
    model_state = checkpoint.load_model_file(path)
    optim_state = checkpoint.load_pt(Path(path) / "optimizer.pt")
    if is_fsdp(model):  # every rank reads the whole file and keeps its shard
        opts = StateDictOptions(full_state_dict=True)
        # Tensors are DCP values; only dict's invariance keeps mypy from seeing it.
        set_model_state_dict(model, cast(DictValueType, model_state), options=opts)
        set_optimizer_state_dict(model, optimizer, optim_state["optimizer"], options=opts)
    else:
        getattr(model, "module", model).load_state_dict(model_state)
        optimizer.load_state_dict(optim_state["optimizer"])
    scheduler.load_state_dict(optim_state["scheduler"])


def _load_sharded(model, optimizer, spec: OptimizerSpec, scheduler, path: Path) -> None:
    """DCP fills this run's own state dicts in place (its shards, or whole tensors without
    FSDP) from whatever sharding the checkpoint was saved with, into the fresh optimizer's
    zero moments (ensure_optimizer_state)."""
    ensure_optimizer_state(optimizer, spec)
    model_state, optim_state = get_state_dict(model, optimizer)
    # A checkpoint written before ensure_optimizer_state covered parameters that never had a
    # gradient holds no state for them: they keep the zero state, what a fresh one would be.
    saved = saved_state_names(checkpoint.saved_keys(path))
    states = cast(dict[str, Any], optim_state["state"])  # parameter name -> its state
    unsaved = {n: states.pop(n) for n in list(states) if n not in saved}
    # Two kinds of DCP state dict under one roof: Any, not their join (object).
    loaded: dict[str, Any] = {"model": model_state, "optimizer": optim_state}
    checkpoint.load_sharded(loaded, path)
    states.update(unsaved)
    set_state_dict(model, optimizer, model_state_dict=loaded["model"],
                   optim_state_dict=loaded["optimizer"])
    scheduler.load_state_dict(checkpoint.load_pt(Path(path) / "scheduler.pt"))


def saved_state_names(keys: set[str]) -> set[str]:
    """The parameters a checkpoint holds optimizer state of, from its flattened keys
    ("optimizer.state.FQN.NAME", NAME one of the optimizer's state names)."""
    prefix = "optimizer.state."
    return {k[len(prefix):].rpartition(".")[0] for k in keys if k.startswith(prefix)}


def _batch_position(saved: dict[str, Any], cfg: PretrainConfig, info: DistInfo) -> int:
    """The saved position ("batch": micro-batches per rank into the epoch) in this run's
    micro-batches. All ranks share one permutation and rank r takes every world-th position of
    it (RankSampler, either sampler version; a blend's items are laid out before the shuffle,
    litebert.data.blend), so micro-batch i of all ranks together is the same slice of it
    whatever the number of ranks: a position converts exactly when the sizes divide."""
    then = saved.get("world_size", info.world_size) * saved.get("config", {}).get(
        "micro_batch_size", cfg.micro_batch_size)
    now = info.world_size * cfg.micro_batch_size
    seen = saved["batch"] * then
    if seen % now:
        raise RunConfigError(
            f"--resume: the checkpoint stopped {seen} instances into epoch {saved['epoch']}, "
            f"not a whole number of this run's micro-batches ({cfg.micro_batch_size} x "
            f"{info.world_size} processes); resume with a micro_batch_size x processes "
            f"that divides {seen}")
    return seen // now


# ---- exporting ------------------------------------------------------------------------------

def saved_objective(saved: dict[str, Any]) -> Objective:
    """The objective of a checkpoint's state.json (its run config; one written before there
    was a choice gets the option's default), without the run's data: enough to build and
    export."""
    cfg = saved_run_config(saved.get("config", {}))
    return resolve(cfg.objective.name)(cfg)


def load_model_state(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(whole model state dict, state.json) of checkpoint `path`, checksums verified, in
    this one process whatever the format (no process group needed)."""
    saved = checkpoint.verify(path, checksums=True)
    if saved.get("format") != "sharded":
        return checkpoint.load_model_file(path), saved
    config = ModelConfig.from_dict(saved["model_config"], source=str(path / "state.json"))
    with torch.device("meta"):  # shapes and dtypes only: nothing initialised twice
        shapes = saved_objective(saved).build(config).state_dict()
    loaded = {"model": {k: torch.empty(v.shape, dtype=v.dtype) for k, v in shapes.items()}}
    checkpoint.load_sharded(loaded, path)
    return loaded["model"], saved


def export_run(run_dir: str | Path, out_dir: str | Path | None = None,
               unroll: bool = False) -> Path:
    """`litebert export`: the newest checkpoint of RUN_DIR as model directory(ies), the
    objective's export. A damaged one is an error naming the file, not a silent export of an
    older one."""
    run_dir = Path(run_dir)
    found = checkpoint.list_checkpoints(run_dir)
    if not found:
        raise checkpoint.CheckpointNotFound(f"{run_dir}: no checkpoint to export")
    model_state, saved = load_model_state(found[-1])
    config = ModelConfig.from_dict(saved["model_config"], source=str(found[-1] / "state.json"))
    out = Path(out_dir or run_dir / "export")
    with explained_export(run_dir, out, model_state):
        written = saved_objective(saved).export(model_state, config, run_dir, out,
                                                unroll=unroll)
        finish_export(out, run_dir, saved_run_config(saved.get("config", {})))
        return written


def explained_export(run_dir: Path, out_dir: Path, model_state: dict[str, torch.Tensor],
                     together: bool = False) -> AbstractContextManager[None]:
    """Writing the export of RUN_DIR to `out_dir`: a failed write is a WriteFailed naming it,
    about the weights' size as the space needed (bytes; the tokenizer adds little) and the
    checkpoint to export again from. Each of its files is written atomically, so what an
    earlier export wrote is either still there whole or replaced whole. together: every
    rank enters the block (only rank 0 writes), see explained_write."""
    def after() -> str:
        newest = checkpoint.latest(run_dir)
        if newest is None:
            return "free some space, then run it again"
        return (f"nothing complete was damaged and the newest intact checkpoint is {newest}: "
                f"free some space, then run `litebert export {run_dir}` to write it again")
    needed = sum(t.numel() * t.element_size() for t in model_state.values())
    return explained_write(out_dir, "the export", needed=needed, after=after,
                           agree=agree_on_write if together else None)
