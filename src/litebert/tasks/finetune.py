"""`litebert finetune`: one loop for every task family.

A task adapter (see tasks/base.py) loads and encodes the data, builds the model and scores it
on dev; this module owns the rest: AdamW with warmup + linear decay (and layer-wise lr decay,
tasks/layer_decay.py), length-bucketed batches, evaluation on dev, the best-on-dev checkpoint
in OUT/model, OUT/results.json, and `--seeds N` (median and spread over seeds). Where it runs
(device, torchrun's ranks, precision, compile) is tasks/runtime.py's: the loop below steps
on global batches whose rows the ranks share, and writes files on rank 0 only.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from litebert.compat import check_model_reads
from litebert.distributed import all_reduce_sum, rank_and_world, unwrap
from litebert.model.backbone import backbone_class
from litebert.progress import progress
from litebert.tasks.base import FinetuneConfig, TaskAdapter, config_record
from litebert.tasks.batching import length_batches, pad_rows
from litebert.tasks.layer_decay import layer_decay_groups
from litebert.tasks.model_source import config_dir, model_config_of
from litebert.tasks.registry import TASKS
from litebert.tasks.runtime import RowIds, Runtime
from litebert.tasks.table_inputs import select_rows
from litebert.train.compiling import compile_errors
from litebert.train.optimizers import build_optimizer, default_groups
from litebert.train.scheduler import build_scheduler

log = logging.getLogger("litebert")

OPTIMIZER_FIELDS = ("lr", "weight_decay", "layer_decay", "layer_decay_rule", "adam_beta2",
                    "adam_epsilon")  # in results.json


def adapter_for(cfg: FinetuneConfig, training: bool = True,
                runtime: Runtime | None = None) -> TaskAdapter:
    """The task's adapter (its registry entry's, imported on use: each pulls in its readers);
    it evaluates on `runtime` (by default the config's)."""
    module, name = TASKS[cfg.task].adapter.split(":")
    runtime = runtime or Runtime.from_config(cfg)
    task = getattr(importlib.import_module(module), name)(cfg, runtime, training)
    # A model directory whose tokenizer is not the model's stops here, not in an embedding
    # (or, for a summary read from the wrong token, not in silently wrong predictions). A
    # sentence-transformers directory may keep its model in a module folder.
    model_dir = config_dir(cfg.model)
    config = model_config_of(cfg.model, cfg.model_config)  # as finetune_config read it
    check_model_reads(config, task.tokenizer, str(model_dir / "config.json"),
                      str(task.tokenizer.path), reader=backbone_class(config), summary=True)
    return task


# ---- one run -------------------------------------------------------------------------------

def train_one(cfg: FinetuneConfig, out: Path) -> dict[str, Any]:
    """Fine-tune with cfg.seed; keep the best-on-dev model in out/model; return results."""
    runtime = Runtime.from_config(cfg)
    torch.manual_seed(cfg.seed)
    task = adapter_for(cfg, runtime=runtime)
    model = runtime.place(task.build_model())  # on the device before the optimizer
    optimizer = build_optimizer(cfg.optimizer, model, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                betas=(0.9, cfg.adam_beta2), eps=cfg.adam_epsilon,
                                param_groups=finetune_groups(model, cfg))
    # LambdaLR keeps each group's own lr as its initial_lr: one schedule, the layers' ratios.
    scheduler = build_scheduler(optimizer, "linear", warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    if runtime.is_main:
        log.info("fine-tuning %s on %s", cfg.task, runtime.describe())
    start = time.perf_counter()
    with compile_errors(runtime.compiled):  # compiling happens at the first step and eval
        loop = TrainingLoop(cfg, task, runtime, runtime.wrap(model), optimizer, scheduler, out)
        history, best = loop.run()
        if task.writes_test_predictions:  # with the best model; its dev files are written
            runtime.barrier()  # rank 0 has saved it
            best_model = type(model).from_pretrained(out / "model").to(runtime.device).eval()
            task.write_predictions(best_model, out, dev=False)
    results = {"task": cfg.task, "seed": cfg.seed, "best_step": best.step,
               "metric": task.primary, "dev": best.metrics, "history": history,
               "seconds": round(time.perf_counter() - start, 1),
               "timeline": loop.timeline,
               "schedule": {k: getattr(cfg, k) for k in ("max_steps", "warmup_steps", "lr")},
               # What the optimiser used, defaults resolved; which of them the family gave.
               "optimizer": {k: getattr(cfg, k) for k in OPTIMIZER_FIELDS},
               "defaults": cfg.family_defaults,
               "config": config_record(cfg)}
    if runtime.is_main:
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


@dataclass(frozen=True)
class BestEvaluation:
    """The evaluation that scored best on dev so far (its model is OUT/model)."""

    step: int
    score: float  # task.score(metrics): what "best" maximises
    metrics: dict[str, float]


class TrainingLoop:
    """The steps of one run over length-bucketed global batches, its loss lines and its
    evaluations; `run()` returns (history, best)."""

    def __init__(self, cfg: FinetuneConfig, task: TaskAdapter, runtime: Runtime,
                 model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler,
                 out: Path):
        self.cfg, self.task, self.runtime, self.out = cfg, task, runtime, out
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler  # DDP's
        self.history: list[dict[str, Any]] = []
        self.best: BestEvaluation | None = None
        # This rank's shares of the mean losses since the last loss line, (), on the device.
        self.losses = torch.zeros((), device=runtime.device)
        self.lr = 0.0  # the last step's (of the first parameter group)
        # (step, training seconds since the loop began) at each loss line, where the loop
        # syncs anyway: the steady rate after compiling can be read off it (results.json's
        # "timeline"). Evaluations, and their graphs' compiling, are left out of the clock.
        self.timeline: list[tuple[int, float]] = []
        self.began = time.perf_counter()
        self.evaluating = 0.0  # seconds spent in evaluations so far
        self.bar = progress(total=cfg.max_steps, desc=f"fine-tuning {cfg.task}", unit="step",
                            disable=not runtime.is_main)

    def run(self) -> tuple[list[dict[str, Any]], BestEvaluation]:
        cfg = self.cfg
        rng = np.random.default_rng(cfg.seed)  # the same batches on every rank
        step = logged = 0
        self.model.train()
        while step < cfg.max_steps:
            for batch_ids in length_batches(self.task.train_lengths, cfg.batch_size, rng):
                self.losses += self.train_step(batch_ids)
                step += 1
                self.bar.update(1)
                evaluating = step % cfg.eval_every == 0 or step == cfg.max_steps
                if step % cfg.log_every == 0 or evaluating:  # the loop's only host syncs
                    self.log_loss(step, step - logged)
                    logged = step
                if evaluating:  # off the timeline's clock, saving the best model included
                    began = time.perf_counter()
                    self.evaluate_and_keep(step)
                    self.evaluating += time.perf_counter() - began
                if step == cfg.max_steps:
                    break
        self.bar.close()
        if self.best is None:  # the loop evaluates at max_steps at the latest
            raise RuntimeError(f"fine-tuning {cfg.task}: no evaluation ran in {step} steps")
        return self.history, self.best

    def train_step(self, batch_ids: RowIds) -> torch.Tensor:
        """One optimizer step on a global batch, this rank running its rows; this rank's
        share of the batch's mean loss, (), on the device (nothing read back here)."""
        runtime, scaler = self.runtime, self.runtime.scaler
        if runtime.cuda_graphs:  # this step's replays may overwrite the last step's outputs
            torch.compiler.cudagraph_mark_step_begin()
        self.lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
        if hasattr(self.task, "train_backward"):  # a loss over the whole batch's rows
            share = self.task.train_backward(self.model, batch_ids)
        else:
            share = self.backward(*runtime.rows_of(batch_ids))
        if scaler:
            scaler.unscale_(self.optimizer)  # clip the true gradients
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if scaler:  # skips a step whose gradients overflowed
            scaler.step(self.optimizer)
            scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return share

    def backward(self, rows: list[int], weight: float) -> torch.Tensor:
        """Forward and backward of this rank's rows, whose loss is a mean over them; this
        rank's share of the batch's mean loss, detached."""
        runtime, scaler = self.runtime, self.runtime.scaler
        batch = self.task.collate(select_rows(self.task.train_rows, rows))
        # A task whose loss ignores rows of given labels (its dummy_labels) takes every step
        # at one batch size; a short batch's copies add nothing (batching.pad_rows).
        if self.task.dummy_labels is not None:
            batch = pad_rows(batch, runtime.rank_batch_size(self.cfg.batch_size),
                             self.task.dummy_labels)
        batch = runtime.to_device(batch)
        with runtime.amp:
            loss = self.model(**batch).loss.float()  # the mean over this rank's rows
        # DDP averages gradients over ranks: weight * world makes it the global batch's.
        scaled = loss * (weight * runtime.info.world_size)
        (scaler.scale(scaled) if scaler else scaled).backward()
        return loss.detach() * weight

    def log_loss(self, step: int, steps: int) -> None:
        """The mean training loss of the last `steps` steps, summed over ranks (every rank
        takes part), on rank 0's progress bar and log."""
        mean = float(all_reduce_sum(self.losses)) / steps
        training = time.perf_counter() - self.began - self.evaluating
        self.timeline.append((step, round(training, 3)))
        self.losses.zero_()
        if self.runtime.is_main:
            self.bar.set_postfix(loss=f"{mean:.4f}")
            log.info("step %d: loss %.4f (mean of %d step%s), lr %.3g", step, mean, steps,
                     "" if steps == 1 else "s", self.lr)

    def evaluate_and_keep(self, step: int) -> None:
        """Evaluate on dev (every rank its share), append to history; rank 0 saves the model
        when it beats the best (every rank holds the same metrics, so agrees on that)."""
        self.model.eval()
        with torch.no_grad():
            metrics = self.task.evaluate(unwrap(self.model), self.out)
        self.model.train()
        self.history.append({"step": step, **metrics})
        score = self.task.score(metrics)
        if self.runtime.is_main:
            log.info("step %d: %s", step, json.dumps(metrics))
        if self.best is None or score > self.best.score:
            self.best = BestEvaluation(step=step, score=score, metrics=metrics)
            if self.runtime.is_main:
                self.task.save(unwrap(self.model), self.out / "model")


def finetune_groups(model: torch.nn.Module, cfg: FinetuneConfig) -> list[dict]:
    """The optimizer's groups (weight decay on all but LayerNorm / bias / 1-D parameters),
    each split by layer-wise lr multiplier (one group each when cfg.layer_decay is 1)."""
    groups = default_groups(cfg.optimizer, model, cfg.weight_decay)
    return layer_decay_groups(model, groups, cfg.lr, cfg.layer_decay, cfg.layer_decay_rule)


# ---- several seeds -------------------------------------------------------------------------

def finetune(cfg: FinetuneConfig) -> dict[str, Any]:
    """One run, or cfg.seeds runs in OUT/seed-S with the median and spread in OUT."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.seeds == 1:
        return train_one(cfg, out)
    runs = []
    for k in range(cfg.seeds):
        seed_cfg = dataclasses.replace(cfg, seed=cfg.seed + k, seeds=1)
        seed_dir = out / f"seed-{cfg.seed + k}"
        seed_dir.mkdir(exist_ok=True)
        runs.append(train_one(seed_cfg, seed_dir))
    summary = {"task": cfg.task, "seeds": [r["seed"] for r in runs], "metric": runs[0]["metric"],
               "dev": _median_and_spread([r["dev"] for r in runs]),
               "runs": [{"seed": r["seed"], "dev": r["dev"]} for r in runs],
               "defaults": cfg.family_defaults}
    if rank_and_world()[0] == 0:
        (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _median_and_spread(results: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    out = {}
    for key in results[0]:
        values = [r[key] for r in results if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = {"median": statistics.median(values), "min": min(values),
                        "max": max(values), "stdev": statistics.pstdev(values)}
    return out


def evaluate_model(cfg: FinetuneConfig) -> dict[str, Any]:
    """`litebert evaluate`: score cfg.model on dev as is; write the prediction files (rank 0;
    under torchrun every rank evaluates its share of the batches)."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    runtime = Runtime.from_config(cfg)
    task = adapter_for(cfg, training=False, runtime=runtime)
    model = runtime.place(task.build_model()).eval()  # the weights of cfg.model, dropout off
    with compile_errors(runtime.compiled), torch.no_grad():
        metrics = task.evaluate(model, out)
        task.write_predictions(model, out)  # this evaluation's dev files, and test's if any
    result = {"task": cfg.task, "model": cfg.model, "dev": metrics}
    if not runtime.is_main:
        return result
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
