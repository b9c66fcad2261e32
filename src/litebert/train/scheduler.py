"""torch's LambdaLR over a schedule's multipliers (schedule.py, where the step convention is
given): build_scheduler, and resume_at for a run that continues from a checkpoint."""

from __future__ import annotations

import torch

from litebert.train.schedule import multiplier


def build_scheduler(optimizer: torch.optim.Optimizer, name: str = "polynomial",
                    warmup_steps: int = 0, total_steps: int | None = None, power: float = 1.0,
                    *, end_factor: float = 0.0, decay_from_zero: bool = False,
                    decay_steps: int = 0) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR for `name` in SCHEDULES; the k-th optimizer.step() uses lr * f(k).
    `decay_steps` is "wsd"'s decay (0: wsd_decay_steps' default).

    Right after construction the optimizer's lr is already lr * f(1); call scheduler.step()
    after every optimizer.step(). The lambda is a plain closure, so scheduler.state_dict()
    holds only numbers (loadable with torch.load(weights_only=True)).
    """
    f = multiplier(name, warmup_steps, total_steps, power, end_factor, decay_from_zero,
                    decay_steps)

    def lr_lambda(steps_taken: int) -> float:
        return f(steps_taken + 1)  # LambdaLR passes steps taken; f wants the step about to run

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def resume_at(scheduler: torch.optim.lr_scheduler.LambdaLR, lr: float) -> None:
    """After a checkpoint's scheduler state was loaded into `scheduler`: the run's own peak
    `lr` (the state holds the checkpoint's, which a --resume PATH may change) and the next
    step's rate from the run's curve at the restored count (its max_steps or schedule may
    differ too). A run that continues unchanged gets the very numbers it saved."""
    scheduler.base_lrs = [lr for _ in scheduler.base_lrs]
    groups = scheduler.optimizer.param_groups
    for group, rate in zip(groups, scheduler.lr_lambdas, strict=True):
        group["initial_lr"] = lr
        group["lr"] = lr * rate(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in groups]  # what get_last_lr() reports
