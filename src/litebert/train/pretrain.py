"""`pretrain(cfg)`: a run as its config says, in one go (train/trainer.py) or in phases
(train/phased_run.py, which builds on the same Trainer). The names callers take from here
are the Trainer's module's, so that a run's entry and its parts are one import."""

from __future__ import annotations

import logging
import math

from litebert.train.phased_run import run_in_phases
from litebert.train.restart import RunComplete
from litebert.train.run_config import PretrainConfig
from litebert.train.state import export_run
from litebert.train.trainer import (
    Trainer,
    TrainingDiverged,
    model_config,
    resolved_workers,
)

__all__ = ["RunComplete", "Trainer", "TrainingDiverged", "export_run",
           "model_config", "pretrain", "pretrain_unless_complete", "resolved_workers"]

log = logging.getLogger("litebert")


def pretrain(cfg: PretrainConfig) -> dict[str, float]:
    """Train as `cfg` says; returns the final evaluation (empty without held-out data).
    RunComplete when the run in cfg.out has nothing left to do (restart.py)."""
    if not math.isfinite(cfg.lr):
        raise ValueError(f"lr={cfg.lr} is not finite")
    if cfg.phases or cfg.new_phase:
        return run_in_phases(cfg)
    return Trainer(cfg, stop_if_complete=True).run()


def pretrain_unless_complete(cfg: PretrainConfig) -> dict[str, float]:
    """pretrain(cfg), or, when the run is complete already (a demo or a study run again),
    a log line saying so and the evaluation it logged at its last step."""
    try:
        return pretrain(cfg)
    except RunComplete as done:
        log.info("%s", done)
        return done.evaluation
