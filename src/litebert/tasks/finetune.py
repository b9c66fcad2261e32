"""`litebert finetune`: one loop for every task family.

A task adapter (see tasks/base.py) loads and encodes the data, builds the model and scores it
on dev; this module owns the rest: AdamW with warmup + linear decay (and layer-wise lr decay,
tasks/layer_decay.py), length-bucketed batches, evaluation on dev, the best-on-dev checkpoint
in OUT/model, OUT/results.json, and `--seeds N` (median and spread over seeds).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from litebert.compat import check_model_reads
from litebert.model.backbone import backbone_class
from litebert.model.hub import read_config
from litebert.progress import progress
from litebert.tasks.base import FinetuneConfig, TaskAdapter
from litebert.tasks.batching import length_batches
from litebert.tasks.layer_decay import layer_decay_groups
from litebert.train.lamb import adamw_param_groups, build_optimizer
from litebert.train.schedule import build_scheduler

log = logging.getLogger("litebert")

# Task name -> "module:class" of its adapter; imported on use (each pulls in its readers).
ADAPTERS = {"squad1": "litebert.tasks.qa:SquadTask", "squad2": "litebert.tasks.qa:SquadTask",
            "race": "litebert.tasks.choice:RaceTask"}
DEFAULT_ADAPTER = "litebert.tasks.sequence:SequenceTask"  # GLUE and generic tables
OPTIMIZER_FIELDS = ("lr", "weight_decay", "layer_decay", "layer_decay_rule", "adam_beta2",
                    "adam_epsilon")  # in results.json


def adapter_for(cfg: FinetuneConfig, training: bool = True) -> TaskAdapter:
    module, name = ADAPTERS.get(cfg.task, DEFAULT_ADAPTER).split(":")
    task = getattr(importlib.import_module(module), name)(cfg, training)
    # A model directory whose tokenizer is not the model's stops here, not in an embedding
    # (or, for a summary read from the wrong token, not in silently wrong predictions).
    config = read_config(Path(cfg.model))
    check_model_reads(config, task.tokenizer, str(Path(cfg.model) / "config.json"),
                      str(task.tokenizer.path), reader=backbone_class(config), summary=True)
    return task


# ---- one run -------------------------------------------------------------------------------

def train_one(cfg: FinetuneConfig, out: Path) -> dict[str, Any]:
    """Fine-tune with cfg.seed; keep the best-on-dev model in out/model; return results."""
    torch.manual_seed(cfg.seed)
    task = adapter_for(cfg)
    model = task.build_model()
    optimizer = build_optimizer("adamw", model, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                betas=(0.9, cfg.adam_beta2), eps=cfg.adam_epsilon,
                                param_groups=finetune_groups(model, cfg))
    # LambdaLR keeps each group's own lr as its initial_lr: one schedule, the layers' ratios.
    scheduler = build_scheduler(optimizer, "linear", warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    rng = np.random.default_rng(cfg.seed)
    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    step = 0
    start = time.perf_counter()
    bar = progress(total=cfg.max_steps, desc=f"fine-tuning {cfg.task}", unit="step")
    model.train()
    while step < cfg.max_steps:
        for batch_ids in length_batches(task.train_lengths, cfg.batch_size, rng):
            loss = model(**task.collate([task.train_rows[i] for i in batch_ids])).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}")
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                best = _evaluate_and_keep(task, model, step, history, best, out)
            if step == cfg.max_steps:
                break
    bar.close()
    if best is None:  # the loop evaluates at max_steps at the latest
        raise RuntimeError(f"fine-tuning {cfg.task}: no evaluation ran in {step} steps")
    if hasattr(task, "write_test_predictions"):  # GLUE test split(s), with the best model
        task.write_test_predictions(type(model).from_pretrained(out / "model").eval(), out)
    results = {"task": cfg.task, "seed": cfg.seed, "best_step": best["step"],
               "metric": task.primary, "dev": best["metrics"], "history": history,
               "seconds": round(time.perf_counter() - start, 1),
               "schedule": {k: getattr(cfg, k) for k in ("max_steps", "warmup_steps", "lr")},
               # What the optimiser used, defaults resolved; which of them the family gave.
               "optimizer": {k: getattr(cfg, k) for k in OPTIMIZER_FIELDS},
               "defaults": cfg.family_defaults,
               "config": dataclasses.asdict(cfg)}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def finetune_groups(model: torch.nn.Module, cfg: FinetuneConfig) -> list[dict]:
    """AdamW's groups: weight decay on all but LayerNorm / bias / 1-D parameters, each side
    split by layer-wise lr multiplier (one group each when cfg.layer_decay is 1)."""
    return layer_decay_groups(model, adamw_param_groups(model, cfg.weight_decay), cfg.lr,
                              cfg.layer_decay, cfg.layer_decay_rule)


def _evaluate_and_keep(task: TaskAdapter, model: Any, step: int,
                       history: list[dict[str, Any]], best: dict[str, Any] | None,
                       out: Path) -> dict[str, Any]:
    """Evaluate on dev, append to history; save the model when it beats `best`; the new best."""
    model.eval()
    with torch.no_grad():
        metrics = task.evaluate(model, out)
    model.train()
    history.append({"step": step, **metrics})
    score = task.score(metrics)
    log.info("step %d: %s", step, json.dumps(metrics))
    if best is None or score > best["score"]:
        best = {"step": step, "score": score, "metrics": metrics}
        task.save(model, out / "model")
    return best


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
    """`litebert evaluate`: score cfg.model on dev as is; write the prediction files."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    task = adapter_for(cfg, training=False)
    model = task.build_model().eval()  # the weights of cfg.model, dropout off
    with torch.no_grad():
        metrics = task.evaluate(model, out)
        if hasattr(task, "write_test_predictions"):
            task.write_test_predictions(model, out)
    if hasattr(task, "outputs"):  # SQuAD: predictions.json, null_odds.json
        for name, content in task.outputs.items():
            (out / name).write_text(json.dumps(content, indent=2) + "\n")
    if hasattr(task, "last_predictions") and hasattr(task, "dev"):  # RACE answers (RaceTask)
        from litebert.tasks.race import write_race_predictions

        write_race_predictions(task.dev, task.last_predictions, out / "predictions.json")
    result = {"task": cfg.task, "model": cfg.model, "dev": metrics}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
