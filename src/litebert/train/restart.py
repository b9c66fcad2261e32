"""Where a pre-training run starts: step 0, the newest checkpoint of its --out, or one the
user names; and the checks that keep two runs from ever mixing in one directory.

Running the same command again continues the run: what `torchrun --max-restarts`, a
requeued Slurm job or a user after a crash all do. The run must agree with the checkpoint
on everything that defines what is trained (the fields outside HOW_IT_RUNS, the model and
the data's content); otherwise it stops with a sentence listing what differs. `--restart`
starts over: the old run moves aside whole to OUT.previous-STAMP, nothing deleted.
`--resume PATH` continues from a chosen checkpoint and may change the training schedule
(SCHEDULE); checkpoints of --out newer than PATH are of a branch this run abandons: they
move to OUT/checkpoints/superseded-STAMP.

Each run has an id, recorded in every checkpoint it writes and kept by the runs that
continue it; pruning deletes only checkpoints with this run's id (checkpoint.prune).

A run whose checkpoint is at its last step, with its export written when it asks for one,
is complete: the same command again does nothing but say so (RunComplete). Training
further is asked for with --resume PATH and a larger --max-steps (or --new-phase), a new
export with `litebert export`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litebert.config import ModelConfig
from litebert.data.blend import data_differences
from litebert.distributed import barrier, broadcast_object, rank_and_world
from litebert.train import checkpoint
from litebert.train.metrics import read_metrics
from litebert.train.run_config import PretrainConfig, RunConfigError, saved_run_config

log = logging.getLogger("litebert")

# How a run is carried out, not what it trains: these may differ when a run continues.
HOW_IT_RUNS = frozenset({
    "data", "out", "resume", "restart", "num_workers", "log_every", "eval_every",
    "eval_instances", "save_every", "keep_last", "peak_tflops", "export", "compile",
    "precision", "fsdp", "micro_batch_size", "async_save", "max_nonfinite",
    "activation_checkpointing"})
# The schedule: may differ from the checkpoint's only with an explicit --resume PATH.
SCHEDULE = frozenset({"max_steps", "lr", "warmup_steps", "schedule", "power", "decay_steps"})
# Set by torchrun on the workers it restarts, and by Slurm in a requeued job.
RESTART_COUNTS = ("TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT")


@dataclass(frozen=True)
class Start:
    checkpoint: Path | None  # None: from step 0
    run_id: str  # recorded in each checkpoint this run writes
    adopts_unnamed: bool  # checkpoints written before runs had ids count as this run's
    step: int = 0  # the checkpoint's step


def plan_start(cfg: PretrainConfig, model: ModelConfig, data_digest: str,
               agree: Callable[..., None] | None = None) -> Start:
    """Decide where the run starts (every rank calls this; rank 0 moves files). `agree`
    checks the checkpoint against the run, check_agreement's arguments (a run in phases
    passes its own, litebert.train.phase_start)."""
    run_dir = Path(cfg.out)
    if cfg.restart:
        _restart(run_dir)
    explicit = cfg.resume not in (None, "auto")
    if explicit:
        path = checkpoint.resolve_resume(run_dir, str(cfg.resume))
        assert path is not None
        _supersede_later(run_dir, path)
    else:
        path = checkpoint.resolve_resume(run_dir, "auto")
    if path is not None:
        record = json.loads((path / "state.json").read_text(encoding="utf-8"))
        (agree or check_agreement)(record, cfg, model, data_digest, str(path),
                                   allow_schedule=explicit)
        run_id = record.get("run_id")
        return Start(path, run_id or _new_id(), adopts_unnamed=run_id is None,
                     step=int(record["step"]))
    _check_unsaved_run(run_dir, cfg, model)
    return Start(None, _new_id(), adopts_unnamed=False)


class RunComplete(Exception):
    """The run has trained every step it asks for, and written its export if it asks for
    one: nothing to do. `evaluation` is the one it logged at its last step ({} if none)."""

    def __init__(self, message: str, step: int, evaluation: dict[str, float]):
        super().__init__(message)
        self.step, self.evaluation = step, evaluation


def complete(run_dir: Path, start: Start, exported: bool, further: str) -> RunComplete:
    """The RunComplete of a run that continues from its last step; `further` says how to
    train on."""
    export = f", its export in {run_dir / 'export'}" if exported else ""
    return RunComplete(
        f"run {run_dir} is complete at step {start.step}{export}: nothing to do. To train "
        f"further, {further}; `litebert export {run_dir}` writes the export again",
        start.step, logged_evaluation(run_dir, start.step))


def logged_evaluation(run_dir: Path, step: int) -> dict[str, float]:
    """The evaluation metrics.jsonl holds for `step` ({} if none): what the run reported."""
    if not (run_dir / "metrics.jsonl").is_file():
        return {}
    found = [record for record in read_metrics(run_dir)[1] if record["step"] == step]
    return {k: v for k, v in found[-1].items() if k != "step"} if found else {}


def _new_id() -> str:
    return broadcast_object(uuid.uuid4().hex[:12])  # one id for all ranks: rank 0's


def attempt() -> int:
    """0 for a job's first attempt; n for torchrun's n-th restart or a requeued job."""
    return max(int(os.environ.get(name, 0) or 0) for name in RESTART_COUNTS)


def _restart(run_dir: Path) -> None:
    """Move the old run aside, on a job's first attempt only: a restarted attempt of a job
    launched with --restart continues what the first attempt began."""
    if attempt() > 0:
        log.info("--restart: attempt %d of this job, continuing the run its first attempt "
                 "began", attempt())
        return
    if rank_and_world()[0] == 0 and run_dir.is_dir() and any(run_dir.iterdir()):
        aside = run_dir.with_name(f"{run_dir.name}.previous-{_stamp()}")
        os.replace(run_dir, aside)
        log.info("--restart: the old run moved to %s; starting from step 0", aside)
    barrier()  # nobody looks for checkpoints before the directory is clear


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1000000:06d}"


def _supersede_later(run_dir: Path, chosen: Path) -> None:
    """Checkpoints of --out newer than the chosen one, and the metrics they logged, move to
    OUT/checkpoints/superseded-STAMP: the run continues a branch they are not on. A chosen
    checkpoint from elsewhere may not meet checkpoints of another run in --out."""
    found = checkpoint.list_checkpoints(run_dir)
    inside = chosen.resolve().parent == checkpoint.checkpoint_dir(run_dir).resolve()
    if not inside and found:
        raise RunConfigError(
            f"--resume {chosen}: {run_dir} already holds the checkpoints of a run "
            f"({found[-1].name} the newest); continue that one (leave out --resume), pass "
            f"--restart to move it aside first, or choose another --out")
    later = [p for p in found if checkpoint.step_of(p) > checkpoint.step_of(chosen)] \
        if inside else []
    if later and rank_and_world()[0] == 0:
        aside = checkpoint.checkpoint_dir(run_dir) / f"superseded-{_stamp()}"
        aside.mkdir()
        for path in later:
            os.replace(path, aside / path.name)
        metrics = run_dir / "metrics.jsonl"
        if metrics.is_file():
            shutil.copy2(metrics, aside / metrics.name)
        log.warning("--resume %s: the %d later checkpoint(s) of %s and a copy of its "
                    "metrics moved to %s", chosen, len(later), run_dir, aside)
    barrier()


# ---- agreement ------------------------------------------------------------------------------

def check_agreement(record: dict[str, Any], cfg: PretrainConfig, model: ModelConfig,
                    data_digest: str, where: str, allow_schedule: bool = False) -> None:
    """A sentence listing every field in which this run differs from the one that wrote
    `record` (a checkpoint's state.json), if any; the schedule may differ when allowed."""
    ignored = HOW_IT_RUNS | (SCHEDULE if allow_schedule else frozenset())
    then = _flat(saved_run_config(record.get("config", {}), where).to_dict())
    now = _flat(cfg.to_dict())
    differ = [(k, then.get(k), now.get(k)) for k in sorted(set(then) | set(now))
              if k.split(".")[0] not in ignored and then.get(k) != now.get(k)]
    if record.get("model_config"):  # read as a config: a field added since takes its default
        saved = ModelConfig.from_dict(record["model_config"], source=where).to_dict()
        current = model.to_dict()
        said = {k for k, _, _ in differ}  # model_overrides.X explains model.X
        differ += [(f"model.{k}", saved.get(k), current.get(k))
                   for k in sorted(set(saved) | set(current))
                   if saved.get(k) != current.get(k) and f"model_overrides.{k}" not in said]
    if record.get("data_digest") not in (None, data_digest):  # a blend's: each part, weights
        differ += data_differences(record["data_digest"], data_digest)
    if not differ:
        return
    listed = "; ".join(f"{k}: {a!r} there, {b!r} here" for k, a, b in differ)
    advice = ("" if allow_schedule else "; `--resume PATH` continues from a chosen "
              f"checkpoint with another schedule ({', '.join(sorted(SCHEDULE))})")
    raise RunConfigError(
        f"{where} was written by a run with other settings ({listed}). Run the command that "
        f"wrote it to continue it, pass --restart to move that run aside and start over, or "
        f"choose another --out{advice}")


def _flat(values: dict[str, Any]) -> dict[str, Any]:
    """One level of nesting as dotted names: objective.name, model_overrides.hidden_size."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def _check_unsaved_run(run_dir: Path, cfg: PretrainConfig, model: ModelConfig) -> None:
    """A run killed before its first checkpoint left config.json and metrics: this run
    starts it again from step 0, if it is the same run."""
    written = run_dir / "config.json"
    if not written.is_file():
        return
    try:
        record = json.loads(written.read_text(encoding="utf-8"))
        saved = {"config": record["pretrain"], "model_config": record["model"]}
    except (ValueError, KeyError, TypeError):
        raise RunConfigError(f"{written}: not a litebert run's config.json; choose another "
                             f"--out, or pass --restart to move this one aside") from None
    check_agreement(saved, cfg, model, "", str(written))
