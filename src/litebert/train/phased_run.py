"""Training a run in phases: one Trainer per phase, each starting from the checkpoint at the
end of the phase before (litebert.train.phases has the plan, phase_start the checks).

Every phase ends with a checkpoint (the loop saves at its max_steps, the phase's end), and
the next phase starts from it exactly as a restarted command would: so a run killed at any
point, before or after a boundary, goes on bit for bit with the same command, and an
uninterrupted run takes the same path. At a boundary the new phase keeps the model, the
step count, the totals (tokens, seconds) and the RNG; it reads its data from its first
item, starts the objective's carried state afresh (XLNet's memories belong to the old
data) and, when its entry says reset_optimizer, the optimizer's moments; its schedule either
continues the one before (the same curve, counted from where that segment began) or starts
its own (train/phases.py says when).

Before any phase trains, `check_phases` reads every remaining phase's data: one tokenizer
for all, data that fits its attention, no phase longer than an absolute position table, and
no model_overrides that change a parameter's shape.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from litebert.data.blend import RunData, agreed_fields, open_run_data, parse_data
from litebert.distributed import DistInfo, init_distributed
from litebert.models.albert.config import AlbertBackboneConfig
from litebert.objectives import resolve
from litebert.train import phases as plan
from litebert.train.phase_start import (
    agreement,
    extend_plan,
    phase_of,
    read_record,
    start_phase,
)
from litebert.train.restart import Start, plan_start
from litebert.train.run_config import PretrainConfig, RunConfigError, check_data_attention
from litebert.train.scheduler import build_scheduler, resume_at
from litebert.train.state import TrainState, restore_state
from litebert.train.trainer import Trainer, model_config

log = logging.getLogger("litebert")


def run_in_phases(cfg: PretrainConfig) -> dict[str, float]:
    """Train every phase from the one the run stands in; returns the last evaluation."""
    run = extend_plan(cfg) if cfg.new_phase else cfg
    info = init_distributed()
    first = start_phase(run)
    data = check_phases(run, first)  # each phase's data, read once for the whole run
    result: dict[str, float] = {}
    for index in range(first, len(run.phases)):  # the first may be the last, complete
        result = PhaseTrainer(run, index, info, first=index == first,
                              stop_if_complete=index == first, data=data[index]).run()
    return result


class PhaseTrainer(Trainer):
    """The Trainer of phase `index` of `run`: the phase's config, its schedule segment, and
    checkpoints that record the plan and the phase."""

    def __init__(self, run: PretrainConfig, index: int, info: DistInfo, first: bool = True,
                 stop_if_complete: bool = False, data: RunData | None = None):
        self.run_cfg, self.index = run, index
        self.first_step, self.end_step = plan.bounds(run)[index]
        self.segment_first, self.segment_steps = plan.segment(run, index)
        cfg = plan.phase_config(run, index)
        # Only the run's last phase exports; a later phase continues what this one saved.
        changes: dict = {"export": run.export and index == len(run.phases) - 1}
        if not first:
            changes.update(resume="auto", restart=False)
        super().__init__(dataclasses.replace(cfg, **changes), info, stop_if_complete, data)
        if self.info.is_main:
            log.info("phase %d of %d: steps %d to %d, data %s", index + 1, len(run.phases),
                     self.first_step + 1, self.end_step, cfg.data)

    def _new_scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        """The schedule over the segment this phase trains in (a later phase of the segment
        restores its count from the checkpoint)."""
        cfg = self.cfg
        return build_scheduler(self.optimizer, cfg.schedule, warmup_steps=cfg.warmup_steps,
                               total_steps=self.segment_steps, power=cfg.power,
                               decay_steps=cfg.decay_steps)

    def _further(self) -> str:
        """A plan's steps are its phases': a run goes on in a phase of its own."""
        return "add a phase with --new-phase and its data"

    def _plan_start(self) -> Start:
        return plan_start(self.cfg, self.config, self.data_digest,
                          agree=agreement(self.run_cfg, self.index))

    def _record(self) -> dict:
        return {**super()._record(), "plan": self.run_cfg.to_dict(),
                "phase": {"number": self.index + 1, "start_step": self.first_step}}

    def _restore(self, path: Path) -> None:
        """Within the phase: as any resume. At its start (a checkpoint of the phase before):
        the model, counters and RNG, with the data at its first item, the objective's state
        afresh, the optimizer's moments unless reset, and the schedule (module docstring)."""
        record = read_record(path)
        if plan.phase_at(self.run_cfg, int(record["step"])) != self.index:
            raise RunConfigError(f"{path}: step {record['step']} is not in phase "
                                 f"{self.index + 1} (steps {self.first_step + 1} to "
                                 f"{self.end_step}); continue from it with --resume {path}")
        if phase_of(record) == self.index:
            super()._restore(path)
            return
        saved = restore_state(self.model, self.optimizer, self.scheduler, self.cfg, self.info,
                              path, position=False)
        self.state = TrainState.from_saved(saved)
        if self.run_cfg.phases[self.index].get("reset_optimizer"):
            self.optimizer.state.clear()  # the first update creates them, as at step 0
        if self.segment_first == self.index:
            self._fresh_schedule()
        else:  # the segment goes on; --new-phase may have made it longer
            resume_at(self.scheduler, self.cfg.lr)
        if self.info.is_main:
            log.info("phase %d starts from %s (step %d)", self.index + 1, path,
                     self.state.step)

    def _fresh_schedule(self) -> None:
        """A schedule of the phase's own from its first step, at its lr (the optimizer's
        groups hold the checkpoint's rates until then)."""
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] = self.cfg.lr
        self.scheduler = self._new_scheduler()


# ---- before the first step ------------------------------------------------------------------

def check_phases(run: PretrainConfig, first: int) -> dict[int, RunData]:
    """The data of each phase from `first` on, by phase index, each directory's manifest
    read once (the phases' Trainers take it as read). RunConfigError, before anything
    trains, when a phase could not run: its data unreadable or for another attention,
    another tokenizer than the first's, a sequence longer than an absolute position table,
    or a model whose parameters have other shapes than the first phase's."""
    shapes, tokenizer, opened = None, None, {}
    for index in range(first, len(run.phases)):
        cfg = plan.phase_config(run, index)
        where = f"phase {index + 1} (data {cfg.data})"
        if cfg.data is None and index == 0:
            raise RunConfigError("phase 1: no training data: pass --data DIR (built by "
                                 "`litebert data build`) or give the phase `data: DIR`")
        if cfg.data is None:
            raise RunConfigError(f"phase {index + 1} names no data: every phase after the "
                                 f"first reads its own, from its first item; give it `data: "
                                 f"DIR` in the recipe or --set phases.{index + 1}.data=DIR")
        opened[index] = open_run_data(parse_data(cfg.data))
        data = opened[index].first
        check_data_attention(cfg, data.config.packed, resolve(cfg.objective.name).attentions)
        fingerprint = agreed_fields(data)["tokenizer"]
        if tokenizer is not None and fingerprint != tokenizer[1]:
            raise RunConfigError(f"{where}: its tokenizer differs from that of {tokenizer[0]}; "
                                 f"the phases of a run read data built with one tokenizer")
        tokenizer = tokenizer or (data.directory, fingerprint)
        config = model_config(cfg, data)
        check_positions(config, data.config.max_seq_length, where)
        now = model_shapes(cfg, config)
        if shapes is not None and now != shapes[1]:
            changed = sorted(k for k in now if now.get(k) != shapes[1].get(k))
            raise RunConfigError(f"{where}: its model_overrides change the shape of "
                                 f"{', '.join(changed[:3])} from phase {shapes[0]}'s; a phase "
                                 f"may change only fields that leave every parameter as it is "
                                 f"(rotary bases, dropout, a rotary model's "
                                 f"max_position_embeddings)")
        shapes = shapes or (index + 1, now)
    return opened


def check_positions(config, length: int, where: str) -> None:
    """A phase's sequences must fit an absolute position table (ALBERT's backbone: BERT,
    RoBERTa, ELECTRA, ALBERT), whose size is a parameter's and cannot grow between phases;
    a rotary or relative model's max_position_embeddings is what its export declares."""
    if length <= config.max_sequence_length:
        return
    if isinstance(config.backbone_config, AlbertBackboneConfig):
        raise RunConfigError(
            f"{where}: its sequences of {length} tokens exceed the {config.max_sequence_length} "
            f"positions of the model's absolute position table (max_position_embeddings="
            f"{config.max_position_embeddings}), a parameter whose size cannot change between "
            f"phases; build the model with max_position_embeddings of at least {length} from "
            f"the first phase (BERT's and RoBERTa's presets hold 512)")
    log.warning("%s: sequences of %d tokens, beyond the model's max_position_embeddings=%d, "
                "which its export will declare; raise it in the phase's model_overrides",
                where, length, config.max_position_embeddings)


def model_shapes(cfg: PretrainConfig, config) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape of the model the objective builds (on the meta device:
    nothing allocated)."""
    with torch.device("meta"):
        model = resolve(cfg.objective.name)(cfg).build(config)
    return {name: tuple(p.shape) for name, p in model.state_dict().items()}
