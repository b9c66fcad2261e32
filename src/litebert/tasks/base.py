"""What every fine-tuning task shares: the recipes (paper Table 14), the config, the errors,
and the protocol a task adapter follows.

A task adapter (tasks/sequence.py, tasks/qa.py, tasks/choice.py) is constructed from a
FinetuneConfig and offers:

    train_rows, train_lengths       encoded training rows and their lengths (for bucketing)
    collate(rows) -> batch          model inputs incl. labels, padded
    build_model() -> model          the head on the pre-trained weights of cfg.model
    evaluate(model, out) -> metrics scores on dev (and prediction files under out)
    score(metrics) -> float         the number "best on dev" maximises
    save(model, directory)          the model directory (+ tokenizer, task files)
    primary                         name of the primary metric

and optionally `write_test_predictions(model, out)` for unlabeled test splits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

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


class TaskAdapter(Protocol):
    primary: str
    train_rows: list
    train_lengths: list[int]

    def collate(self, rows: list) -> dict: ...

    def build_model(self) -> Any: ...

    def evaluate(self, model: Any, out: Any) -> dict[str, float]: ...

    def score(self, metrics: dict[str, float]) -> float: ...

    def save(self, model: Any, directory: Any) -> None: ...
