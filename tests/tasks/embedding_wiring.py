"""TEMPORARY test wiring of `--task embedding`, until the fine-tuning loop and FinetuneConfig
know the task registry (tasks/registry.py). Remove it when they do; what it stands in for:

- FinetuneConfig accepts task "embedding" with its recipe (RECIPES gets TASKS' entry);
- `adapter_for` finds the adapter (finetune.ADAPTERS gets TASKS' entry);
- the config carries the task's own options as `cfg.task_options`;
- TrainingLoop.train_step calls `task.train_backward(model, rows, weight)` when the adapter
  has one, instead of collate -> model(**batch).loss -> backward (`HookedLoop` below is that
  change, the rest of the step as it is).

Also the worker of the two-process tests: `python -m torch.distributed.run ... -m
tests.tasks.embedding_wiring CONFIG.json` runs one fine-tuning with the fields and options
the JSON file holds.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import torch

from litebert.distributed import shutdown
from litebert.tasks import finetune as finetune_module
from litebert.tasks.base import FinetuneConfig
from litebert.tasks.finetune import TrainingLoop, finetune
from litebert.tasks.finetune_options import RECIPES
from litebert.tasks.registry import TASKS, EmbeddingOptions
from litebert.tasks.runtime import RowIds


class HookedLoop(TrainingLoop):
    """TrainingLoop whose step lets an adapter with train_backward run its own forward and
    backward (what the loop's hook will do)."""

    def train_step(self, batch_ids: RowIds) -> torch.Tensor:
        train_backward = getattr(self.task, "train_backward", None)
        if train_backward is None:
            return super().train_step(batch_ids)
        runtime, scaler = self.runtime, self.runtime.scaler
        rows, weight = runtime.rows_of(batch_ids)
        self.lr = self.optimizer.param_groups[0]["lr"]
        loss = train_backward(self.model, rows, weight)  # this rank's share of the mean
        if scaler:
            scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if scaler:
            scaler.step(self.optimizer)
            scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss


def patches() -> list[tuple[Any, str, Any]]:
    """(object or dict, name, value) of each stand-in; a test applies them with monkeypatch."""
    spec = TASKS["embedding"]
    return [(RECIPES, "embedding", spec.recipe),
            (finetune_module.ADAPTERS, "embedding", spec.adapter),
            (finetune_module, "TrainingLoop", HookedLoop)]


def apply(monkeypatch) -> None:
    for target, name, value in patches():
        if isinstance(target, dict):
            monkeypatch.setitem(target, name, value)
        else:
            monkeypatch.setattr(target, name, value)


def embedding_config(options: EmbeddingOptions, **fields: Any) -> FinetuneConfig:
    """A FinetuneConfig of task "embedding" carrying `options` (the patches applied)."""
    cfg = FinetuneConfig(task="embedding", **fields)
    cfg.task_options = options  # type: ignore[attr-defined]
    return cfg


def main(path: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # rank 0's loss lines
    spec = json.loads(open(path).read())
    for target, name, value in patches():
        if isinstance(target, dict):
            target[name] = value
        else:
            setattr(target, name, value)
    finetune(embedding_config(EmbeddingOptions(**spec["options"]), **spec["fields"]))
    shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
