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
    tokenizer                       the model directory's tokenizer

and optionally `write_test_predictions(model, out)` for unlabeled test splits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from litebert.config import AlbertConfig
from litebert.options import option
from litebert.train.schedule import resolve_warmup

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

# ELECTRA paper, Appendix A, Table 7 (GLUE and SQuAD fine-tuning): peak lr and layer-wise lr
# decay by model size, weight decay 0 (the released code's default is 0.01; the paper's table
# says 0). Table 7 also has Adam eps 1e-6 (AdamW here uses it for every model), batch 32,
# 10% warm-up and 3 epochs (10 for RTE and STS, 2 for SQuAD): those stay the recipes' above,
# whose batch sizes and step counts are ALBERT's (Table 14), so runs of all families compare.
ELECTRA_FINETUNING: dict[str, tuple[float, float]] = {
    "small": (3e-4, 0.8), "base": (1e-4, 0.8), "large": (5e-5, 0.9)}
ELECTRA_WEIGHT_DECAY = 0.0
WEIGHT_DECAY = 0.01  # every other family's (ALBERT's and BERT's fine-tuning)


class FinetuneError(ValueError):
    """A bad fine-tuning request; the message says what to change."""


RECIPE = "the task's recipe"  # what a None default means, in --help


@dataclass
class FinetuneConfig:
    # Fields with the default None ("not given") are typed as what __post_init__ makes of
    # them: the recipe's value, or the value given. Code that reads a config never sees None.
    task: str = option(help="the task; its recipe (paper Table 14) fills the defaults",
                       choices=RECIPES)
    data: str = option(help="the task's directory or file; generic tasks read .tsv, .csv, "
                            ".jsonl, .parquet, or a folder written by datasets' save_to_disk "
                            "(a directory may hold train.* and dev.* of these, or a "
                            "DatasetDict's train/ and validation/ folders)")
    model: str = option(help="a model directory (ours, ALBERT, BERT, ELECTRA or RoBERTa)")
    out: str = option(help="output directory: model/, results.json, predictions")
    lr: float = option(None, "peak learning rate; for an ELECTRA model, ELECTRA's by size "
                             "(3e-4 Small, 1e-4 Base, 5e-5 Large)", shown=RECIPE)
    batch_size: int = option(None, "training examples per step", shown=RECIPE)
    max_steps: int = option(None, "optimizer steps", shown=RECIPE)
    warmup_steps: int = option(
        None, "steps of linear warm-up; when only --max-steps is given, the recipe's share of "
              "max_steps, rounded half up", shown=RECIPE)
    max_seq_length: int = option(None, "tokens per example, longer ones truncated",
                                 shown=RECIPE)
    dropout: float = option(None, "ALBERT's hidden and attention dropout", shown=RECIPE)
    classifier_dropout: float = option(0.1, "dropout before the task head")
    weight_decay: float = option(None, "AdamW's decoupled weight decay; 0 for an ELECTRA "
                                       "model (ELECTRA's fine-tuning)", shown=str(WEIGHT_DECAY))
    layer_decay: float = option(
        None, "layer-wise learning-rate decay in (0, 1]: the head trains at the lr, layer j of "
              "L (1 = lowest) at lr * X^(L+2-j), the embeddings at lr * X^(L+2)",
        shown="0.8 for ELECTRA models (0.9 for ELECTRA-Large), 1.0 (off) otherwise")
    eval_every: int = option(None, "steps between dev evaluations", shown="max_steps / 10")
    eval_batch_size: int = option(64, "examples per batch when evaluating")
    seed: int = option(42, "seed of the head's initialisation and the data order")
    seeds: int = option(1, "runs with seeds seed, seed+1, ...; results report the median")
    # Generic tasks: column names, and a dev split carved from train when there is no dev.
    text_a: str = option("sentence", "generic tasks: the column (field) of the first text")
    text_b: str | None = option(None, "generic tasks: the column of the second text, if any")
    label_column: str = option("label", "generic tasks: the column of the label")
    dev_fraction: float = option(0.1, "generic tasks without a dev file: the share of train "
                                      "held out as dev")
    # SQuAD.
    doc_stride: int = option(128, "SQuAD: tokens between the starts of a context's windows")
    max_query_length: int = option(64, "SQuAD: question tokens kept")
    n_best_size: int = option(20, "SQuAD: start and end candidates per window")
    max_answer_length: int = option(30, "SQuAD: longest answer, in tokens")

    def __post_init__(self) -> None:
        if self.task not in RECIPES:
            raise FinetuneError(f"unknown task {self.task!r}; choose from {', '.join(RECIPES)}")
        lr, batch, dropout, steps, warmup, length = RECIPES[self.task]
        defaults: dict[str, float] = dict(lr=lr, batch_size=batch, dropout=dropout,
                                          max_seq_length=length)
        if None in (self.lr, self.weight_decay, self.layer_decay):  # copies skip the read
            defaults.update(model_defaults(self.model))
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if not 0 < self.layer_decay <= 1:  # also rejects NaN
            raise FinetuneError(f"layer_decay={self.layer_decay}: must lie in (0, 1]; "
                                f"1 turns layer-wise learning-rate decay off")
        try:  # the warm-up rule of pre-training too: a shorter run keeps the recipe's share
            self.max_steps, self.warmup_steps = resolve_warmup(steps, warmup, self.max_steps,
                                                               self.warmup_steps)
        except ValueError as err:
            raise FinetuneError(f"finetune {self.task}: {err}") from None
        if self.eval_every is None:
            self.eval_every = max(1, self.max_steps // 10)
        if self.seeds < 1:
            raise FinetuneError(f"seeds={self.seeds}: must be at least 1")


def electra_size(hidden_size: int) -> str:
    """ELECTRA's size names by hidden size: Small 256, Base 768, Large 1024."""
    return "small" if hidden_size <= 256 else "base" if hidden_size <= 768 else "large"


def model_defaults(model: str) -> dict[str, float]:
    """The optimiser defaults the model directory calls for: ELECTRA's fine-tuning lr, weight
    decay and layer decay (Table 7) for an ELECTRA model, else weight decay 0.01 and no layer
    decay (the lr then stays the recipe's)."""
    config = _directory_config(model)
    if config is None or config.model_type != "electra":
        return {"weight_decay": WEIGHT_DECAY, "layer_decay": 1.0}
    size = electra_size(config.hidden_size)
    lr, decay = ELECTRA_FINETUNING[size]
    log.info("%s is an ELECTRA-%s model (hidden size %d): its defaults are ELECTRA's, lr %g, "
             "weight decay %g, layer decay %g", model, size.capitalize(), config.hidden_size,
             lr, ELECTRA_WEIGHT_DECAY, decay)
    return {"lr": lr, "weight_decay": ELECTRA_WEIGHT_DECAY, "layer_decay": decay}


def _directory_config(model: str) -> AlbertConfig | None:
    """The model directory's config as loading reads it (so an ELECTRA model saved in
    ALBERT's layout is still ELECTRA); None when it cannot be read, which loading the model
    then reports."""
    from litebert.model.hub import read_config  # torch and the families: only when needed

    try:
        return read_config(Path(model))
    except (OSError, ValueError):  # CheckpointError, ConfigError: no or a bad config.json
        return None


def reported(result):
    """(examples, report) -> examples, logging the report when anything was skipped or
    repaired, so no problem in the data goes unmentioned."""
    examples, report = result
    if report.skipped or report.repaired:  # an InputReport
        log.warning(report.summary())
    return examples


def model_overrides(cfg: FinetuneConfig) -> dict[str, Any]:
    return dict(hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.dropout,
                classifier_dropout_prob=cfg.classifier_dropout)


class TaskAdapter(Protocol):
    primary: str
    tokenizer: Any  # the model directory's litebert.Tokenizer
    train_rows: list
    train_lengths: list[int]

    def collate(self, rows: list) -> dict: ...

    def build_model(self) -> Any: ...

    def evaluate(self, model: Any, out: Any) -> dict[str, float]: ...

    def score(self, metrics: dict[str, float]) -> float: ...

    def save(self, model: Any, directory: Any) -> None: ...
