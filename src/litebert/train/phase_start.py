"""Where a run in phases starts, and what a checkpoint must agree on for it to go on.

A phased run's checkpoint records, beside the config of the phase that wrote it, the whole
plan ("plan": the run config, its phases included) and the phase ("phase": its number,
from 1, and the step it started at). The same command continues at the phase the
checkpoint's step falls in; a checkpoint at a phase's end begins the next phase.

Agreement (restart.check_agreement's rules, phase by phase): the checkpoint must agree with
the config its own phase has in this run's plan; every phase's fields but data and
micro_batch_size must be the checkpoint's plan's, unless --resume PATH or --new-phase asks
for another. At a phase's boundary the data is new (its digest is not compared) and the model
fields the next phases change (model_overrides: rotary bases, max_position_embeddings) may
differ from the checkpoint's.

--new-phase (`extend_plan`): the plan of the checkpoint it goes on from, cut at its step,
with one phase more, made of this command's data and of the phase fields in which it differs
from the phase before; when the checkpoint is already in that phase (the same command again),
the run goes on in it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from litebert.config import ModelConfig
from litebert.train import checkpoint
from litebert.train import phases as plan
from litebert.train.restart import attempt, check_agreement
from litebert.train.run_config import PretrainConfig, RunConfigError, saved_run_config


def read_record(path: Path) -> dict[str, Any]:
    return json.loads((Path(path) / "state.json").read_text(encoding="utf-8"))


def planned_checkpoint(cfg: PretrainConfig) -> Path | None:
    """The checkpoint restart.plan_start will continue from, found without checksums
    (plan_start computes them): none on --restart's first attempt, --resume PATH, else
    the newest of --out whose files have their recorded sizes."""
    if cfg.restart and attempt() == 0 or not cfg.resume:
        return None
    if cfg.resume != "auto":
        return Path(cfg.resume)
    for path in reversed(checkpoint.list_checkpoints(Path(cfg.out))):
        if not checkpoint.problems(path):
            return path
    return None


def start_phase(run: PretrainConfig) -> int:
    """The phase (index from 0) the run trains in first."""
    path = planned_checkpoint(run)
    return 0 if path is None else plan.phase_at(run, int(read_record(path)["step"]))


def phase_of(record: dict[str, Any]) -> int:
    """The phase (index from 0) that wrote a checkpoint; 0 for a run without phases."""
    return int(record.get("phase", {}).get("number", 1)) - 1


# ---- agreement ------------------------------------------------------------------------------

def agreement(run: PretrainConfig, index: int) -> Callable[..., None]:
    """restart.plan_start's `agree` for phase `index` of `run`."""
    def agree(record: dict[str, Any], cfg: PretrainConfig, model: ModelConfig,
              data_digest: str, where: str, allow_schedule: bool = False) -> None:
        check_phase_agreement(record, run, index, model, data_digest, where, allow_schedule)
    return agree


def check_phase_agreement(record: dict[str, Any], run: PretrainConfig, index: int,
                          model: ModelConfig, data_digest: str, where: str,
                          allow_schedule: bool) -> None:
    """RunConfigError, one sentence, when the checkpoint `record` (written at `where`) is
    not of this plan's phase `index` or of its boundary (module docstring)."""
    free = allow_schedule or bool(run.new_phase)
    then = phase_of(record)
    saved_plan = record.get("plan")
    if saved_plan is not None and not free:
        theirs = plan.comparable(saved_plan.get("phases", []))
        ours = plan.comparable(run.phases)
        if theirs != ours:
            raise RunConfigError(
                f"{where} was written by a run with other phases ({theirs!r} there, "
                f"{ours!r} here; data and micro_batch_size left out). Run the command that "
                f"wrote it to continue it, pass --restart to move that run aside and start "
                f"over, choose another --out, or go on from it with --resume PATH")
    if then >= len(run.phases) or then > index:
        raise RunConfigError(f"{where} was written in phase {then + 1}, which this run's "
                             f"plan of {len(run.phases)} phase(s) puts after phase "
                             f"{index + 1}, where its step falls; run the command that wrote "
                             f"it to continue it, or choose another --out")
    if then != index:  # at the boundary: new data, and the model fields the phases change
        saved = record.get("model_config") or {}
        exempt = plan.model_fields_changed(run, then, index)
        model = ModelConfig.from_dict(
            {**model.to_dict(), **{k: saved[k] for k in exempt if k in saved}}, source=where)
        data_digest = record.get("data_digest") or data_digest
    check_agreement(record, plan.phase_config(run, then), model, data_digest, where,
                    allow_schedule=free)


# ---- --new-phase ----------------------------------------------------------------------------

def saved_plan(record: dict[str, Any]) -> PretrainConfig:
    """The plan a checkpoint was written under; a run without phases is one phase."""
    if record.get("plan"):
        return saved_run_config(record["plan"])
    cfg = saved_run_config(record.get("config", {}))
    return dataclasses.replace(cfg, phases=[{"steps": cfg.max_steps}])


def extend_plan(cmd: PretrainConfig) -> PretrainConfig:
    """The run --new-phase asks for: the checkpoint's plan, cut at its step, with this
    command's phase after it (module docstring); the command's other fields as they are."""
    if cmd.phases:
        raise RunConfigError("--new-phase: this command has phases already (its recipe's or "
                             "--set phases); a new phase is the command's own fields: "
                             "--set phases=[] leaves the recipe's out")
    path = planned_checkpoint(cmd)
    if path is None:
        raise RunConfigError(f"--new-phase: {cmd.out} holds no checkpoint to go on from; "
                             f"start the run without --new-phase, or name a checkpoint with "
                             f"--resume PATH")
    record = read_record(path)
    step, old = int(record["step"]), saved_plan(record)
    phases = _next_phases(cmd, old, phase_of(record), step)
    base = {name: getattr(old, name) for name in plan.PHASE_FIELDS}
    try:
        run = dataclasses.replace(cmd, **base, phases=phases)
    except RunConfigError as err:
        raise RunConfigError(f"--new-phase from {path}: {err}") from None
    return _continue_branch(run, path)


def _next_phases(cmd: PretrainConfig, old: PretrainConfig, k: int,
                 step: int) -> list[dict[str, Any]]:
    """The old plan through phase k, then the command's phase: phase k again when the
    checkpoint is in it already, else a new one from `step`."""
    start = plan.bounds(old)[k][0]
    again = k > 0 and _entry(cmd, plan.phase_config(old, k - 1)) == _without_steps(
        old.phases[k])
    if again:  # the same command again: go on in phase k
        kept, first, before = old.phases[:k], start, plan.phase_config(old, k - 1)
    else:
        kept = old.phases[:k] + ([{**old.phases[k], "steps": step - start}]
                                 if step > start else [])
        first, before = step, plan.phase_config(old, k)
    if cmd.max_steps <= first:
        raise RunConfigError(f"--new-phase: --max-steps {cmd.max_steps} leaves the new phase "
                             f"no steps after step {first}, where it begins; give the run's "
                             f"new total, more than {first}")
    return [*kept, {"steps": cmd.max_steps - first, **_entry(cmd, before)}]


def _entry(cmd: PretrainConfig, before: PretrainConfig) -> dict[str, Any]:
    """The command as a phase after `before`: its data, the fields that differ from it, and
    reset_optimizer when asked for."""
    entry: dict[str, Any] = {"data": cmd.data}
    for name in plan.PHASE_FIELDS[1:]:
        if name == "model_overrides":
            changed = {k: v for k, v in cmd.model_overrides.items()
                       if before.model_overrides.get(k) != v}
            if changed:
                entry[name] = changed
        elif getattr(cmd, name) != getattr(before, name):
            entry[name] = getattr(cmd, name)
    if cmd.new_phase == "reset-optimizer":
        entry["reset_optimizer"] = True
    return entry


def _without_steps(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "steps"}


def _continue_branch(run: PretrainConfig, path: Path) -> PretrainConfig:
    """--resume PATH --new-phase once more: when the newest checkpoint of --out already went
    on from PATH into this very plan, continue from it rather than branch from PATH again."""
    if run.resume in (None, "auto"):
        return run
    found = checkpoint.list_checkpoints(Path(run.out))
    if not found or found[-1].resolve() == Path(path).resolve():
        return run
    newest = read_record(found[-1]).get("plan") or {}
    if plan.comparable(newest.get("phases", [])) == plan.comparable(run.phases):
        return dataclasses.replace(run, resume="auto")
    return run
