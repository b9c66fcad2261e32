"""`pretrain(cfg)`: a run as its config says, in one go (train/trainer.py) or in phases
(train/phased_run.py, which builds on the same Trainer). The names callers take from here
are the Trainer's module's, so that a run's entry and its parts are one import."""

from __future__ import annotations

import math

from litebert.train.phased_run import run_in_phases
from litebert.train.run_config import PretrainConfig
from litebert.train.state import export_run
from litebert.train.trainer import (
    Trainer,
    TrainingDiverged,
    data_has_pairs,
    model_config,
    resolved_workers,
)

__all__ = ["Trainer", "TrainingDiverged", "data_has_pairs", "export_run", "model_config",
           "pretrain", "resolved_workers"]


def pretrain(cfg: PretrainConfig) -> dict[str, float]:
    """Train as `cfg` says; returns the final evaluation (empty without held-out data)."""
    if not math.isfinite(cfg.lr):
        raise ValueError(f"lr={cfg.lr} is not finite")
    if cfg.phases or cfg.new_phase:
        return run_in_phases(cfg)
    return Trainer(cfg).run()
