"""`litebert finetune`: the paper's recipes (Table 14), one loop for every task family.

A task adapter (tasks/sequence.py, tasks/qa.py, tasks/choice.py) loads and encodes the data,
builds the model and scores it on dev; this module owns the rest: AdamW with warmup + linear
decay, length-bucketed batches, evaluation on dev, the best-on-dev checkpoint in OUT/model,
OUT/results.json, and `--seeds N` (median and spread over seeds).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from litebert.tasks.batching import length_batches
from litebert.train.lamb import build_optimizer
from litebert.train.schedule import build_scheduler

log = logging.getLogger("litebert")

# Paper Table 14: lr, batch, ALBERT dropout, steps, warmup, max length (classifier dropout 0.1).
RECIPES: dict[str, tuple[float, int, float, int, int, int]] = {
    "cola": (1e-5, 16, 0.0, 5336, 320, 512), "stsb": (2e-5, 16, 0.0, 3598, 214, 512),
    "sst2": (1e-5, 32, 0.0, 20935, 1256, 512), "mnli": (3e-5, 128, 0.0, 10000, 1000, 512),
    "qnli": (1e-5, 32, 0.0, 33112, 1986, 512), "qqp": (5e-5, 128, 0.1, 14000, 1000, 512),
    "rte": (3e-5, 32, 0.1, 800, 200, 512), "mrpc": (2e-5, 32, 0.0, 800, 200, 512),
    "wnli": (2e-5, 16, 0.1, 2000, 250, 512), "squad1": (5e-5, 48, 0.0, 3649, 365, 384),
    "squad2": (3e-5, 48, 0.0, 8144, 814, 512), "race": (2e-5, 32, 0.1, 12000, 1000, 512),
    # Not in the paper: generic tasks get a short, safe default.
    "classification": (2e-5, 32, 0.0, 1000, 100, 128),
    "regression": (2e-5, 32, 0.0, 1000, 100, 128),
}
GLUE = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")


class FinetuneError(ValueError):
    """A bad fine-tuning request; the message says what to change."""


@dataclass
class FinetuneConfig:
    task: str
    data: str
    model: str
    out: str
    lr: float | None = None  # None: the task's recipe
    batch_size: int | None = None
    max_steps: int | None = None
    warmup_steps: int | None = None
    max_seq_length: int | None = None
    dropout: float | None = None  # ALBERT's hidden/attention dropout
    classifier_dropout: float = 0.1
    weight_decay: float = 0.01
    eval_every: int | None = None  # default: 10 evaluations per run
    eval_batch_size: int = 64
    seed: int = 42
    seeds: int = 1
    # Generic tasks: column names, and a dev split carved from train when there is no dev.
    text_a: str = "sentence"
    text_b: str | None = None
    label_column: str = "label"
    dev_fraction: float = 0.1
    # SQuAD.
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30

    def __post_init__(self) -> None:
        if self.task not in RECIPES:
            raise FinetuneError(f"unknown task {self.task!r}; choose from {', '.join(RECIPES)}")
        lr, batch, dropout, steps, warmup, length = RECIPES[self.task]
        defaults = dict(lr=lr, batch_size=batch, dropout=dropout, max_steps=steps,
                        warmup_steps=warmup, max_seq_length=length)
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        self.warmup_steps = min(self.warmup_steps, self.max_steps)
        if self.eval_every is None:
            self.eval_every = max(1, self.max_steps // 10)
        if self.seeds < 1:
            raise FinetuneError(f"seeds={self.seeds}: must be at least 1")


def reported(result):
    """(examples, report) -> examples, logging the report when anything was skipped or
    repaired, so no problem in the data goes unmentioned."""
    examples, report = result
    if getattr(report, "skipped", 0) or getattr(report, "problems", None):
        log.warning(report.summary())
    return examples


def model_overrides(cfg: FinetuneConfig) -> dict[str, Any]:
    return dict(hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                classifier_dropout_prob=cfg.classifier_dropout)


def adapter_for(cfg: FinetuneConfig, training: bool = True):
    if cfg.task in ("squad1", "squad2"):
        from litebert.tasks.qa import SquadTask

        return SquadTask(cfg, training)
    if cfg.task == "race":
        from litebert.tasks.choice import RaceTask

        return RaceTask(cfg, training)
    from litebert.tasks.sequence import SequenceTask

    return SequenceTask(cfg, training)


# ---- one run -------------------------------------------------------------------------------

def train_one(cfg: FinetuneConfig, out: Path) -> dict[str, Any]:
    """Fine-tune with cfg.seed; keep the best-on-dev model in out/model; return results."""
    torch.manual_seed(cfg.seed)
    task = adapter_for(cfg)
    model = task.build_model()
    optimizer = build_optimizer("adamw", model, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = build_scheduler(optimizer, "linear", warmup_steps=cfg.warmup_steps,
                                total_steps=cfg.max_steps)
    rng = np.random.default_rng(cfg.seed)
    history, best, step = [], None, 0
    start = time.perf_counter()
    bar = tqdm(total=cfg.max_steps, desc=f"fine-tuning {cfg.task}", unit="step", mininterval=2)
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
    if hasattr(task, "write_test_predictions"):  # GLUE test split(s), with the best model
        task.write_test_predictions(type(model).from_pretrained(out / "model").eval(), out)
    results = {"task": cfg.task, "seed": cfg.seed, "best_step": best["step"],
               "metric": task.primary, "dev": best["metrics"], "history": history,
               "seconds": round(time.perf_counter() - start, 1),
               "config": dataclasses.asdict(cfg)}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def _evaluate_and_keep(task, model, step, history, best, out: Path):
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
               "runs": [{"seed": r["seed"], "dev": r["dev"]} for r in runs]}
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
    if hasattr(task, "last_predictions"):  # RACE answers
        from litebert.tasks.race import write_race_predictions

        write_race_predictions(task.dev, task.last_predictions, out / "predictions.json")
    result = {"task": cfg.task, "model": cfg.model, "dev": metrics}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
