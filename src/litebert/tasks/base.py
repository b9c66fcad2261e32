"""What every fine-tuning task shares: the recipes (paper Table 14), the config (its defaults:
the model family's, see tasks/family_defaults.py, then the recipe's), the errors, and the
protocol a task adapter follows.

A task adapter (tasks/sequence.py, tasks/qa.py, tasks/choice.py) is constructed from a
FinetuneConfig, the run's Runtime (tasks/runtime.py: device, ranks, precision) and whether it
trains, and offers:

    train_rows, train_lengths       encoded training rows and their lengths (for bucketing)
    collate(rows) -> batch          model inputs incl. labels, padded, on the CPU, of the rows
                                    table_inputs.select_rows(train_rows, ids) picks
    build_model() -> model          the head on the pre-trained weights of cfg.model
    evaluate(model, out) -> metrics scores on dev (and prediction files under out)
    score(metrics) -> float         the number "best on dev" maximises
    save(model, directory)          the model directory (+ tokenizer, task files)
    write_predictions(model, out, dev)
                                    the run's prediction files under out: with dev, those of
                                    the last evaluation (SQuAD's, RACE's answers); the test
                                    predictions of model where the task has a test split
    primary                         name of the primary metric
    tokenizer                       the model directory's tokenizer

An adapter with no prediction files takes write_predictions from `NoPredictionFiles`. The
loop (tasks/finetune.py) knows no task: what is special to one stays in its adapter.

Under torchrun every rank calls evaluate and write_predictions: an adapter runs its
batches through `runtime.evaluate_batches`, which shares them among the ranks and gives every
rank all outputs in order, so each rank computes the same metrics; files are written by rank
0 alone (`runtime.is_main`). `save` is called on rank 0 only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from litebert.cpus import usable_cpus
from litebert.options import option
from litebert.tasks.family_defaults import read_family_defaults
from litebert.tasks.layer_decay import RULE_ALIASES, RULES, rule_name
from litebert.train.precision import PRECISIONS
from litebert.train.run_config import COMPILE_CHOICES, RunConfigError, compile_setting
from litebert.train.schedule import resolve_warmup

log = logging.getLogger("litebert")


@dataclass(frozen=True, kw_only=True)
class TaskRecipe:
    """A task's fine-tuning recipe (ALBERT's Table 14; classifier dropout is 0.1 for all)."""

    lr: float
    batch_size: int
    dropout: float  # ALBERT's hidden and attention dropout
    max_steps: int
    warmup_steps: int
    max_seq_length: int = 512


RECIPES: dict[str, TaskRecipe] = {  # paper Table 14
    "cola": TaskRecipe(lr=1e-5, batch_size=16, dropout=0.0,
                       max_steps=5336, warmup_steps=320),
    "stsb": TaskRecipe(lr=2e-5, batch_size=16, dropout=0.0,
                       max_steps=3598, warmup_steps=214),
    "sst2": TaskRecipe(lr=1e-5, batch_size=32, dropout=0.0,
                       max_steps=20935, warmup_steps=1256),
    "mnli": TaskRecipe(lr=3e-5, batch_size=128, dropout=0.0,
                       max_steps=10000, warmup_steps=1000),
    "qnli": TaskRecipe(lr=1e-5, batch_size=32, dropout=0.0,
                       max_steps=33112, warmup_steps=1986),
    "qqp": TaskRecipe(lr=5e-5, batch_size=128, dropout=0.1,
                      max_steps=14000, warmup_steps=1000),
    "rte": TaskRecipe(lr=3e-5, batch_size=32, dropout=0.1,
                      max_steps=800, warmup_steps=200),
    "mrpc": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                       max_steps=800, warmup_steps=200),
    "wnli": TaskRecipe(lr=2e-5, batch_size=16, dropout=0.1,
                       max_steps=2000, warmup_steps=250),
    "squad1": TaskRecipe(lr=5e-5, batch_size=48, dropout=0.0,
                         max_steps=3649, warmup_steps=365, max_seq_length=384),
    "squad2": TaskRecipe(lr=3e-5, batch_size=48, dropout=0.0,
                         max_steps=8144, warmup_steps=814),
    "race": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.1,
                       max_steps=12000, warmup_steps=1000),
    # Not in the paper: generic tasks get a short, safe default.
    "classification": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                                 max_steps=1000, warmup_steps=100, max_seq_length=128),
    "regression": TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0,
                             max_steps=1000, warmup_steps=100, max_seq_length=128),
}
GLUE = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")

class FinetuneError(ValueError):
    """A bad fine-tuning request; the message says what to change."""


RECIPE = "the task's recipe"  # what a None default means, in --help
FAMILY = "the model family's (see litebert.tasks.family_defaults)"
FAMILY_OR_RECIPE = FAMILY + ", else the task's recipe"


@dataclass
class FinetuneConfig:
    # Fields with the default None ("not given") are typed as what __post_init__ makes of
    # them: the value given, the model family's, or the recipe's. Code that reads a config
    # never sees None.
    task: str = option(help="the task; its recipe (ALBERT's Table 14) fills the defaults "
                            "the model family leaves", choices=RECIPES)
    data: str = option(help="the task's directory or file; generic tasks read .tsv, .csv, "
                            ".jsonl, .parquet, or a folder written by datasets' save_to_disk "
                            "(a directory may hold train.* and dev.* of these, or a "
                            "DatasetDict's train/ and validation/ folders)")
    model: str = option(help="a model directory (ours, ALBERT, BERT, ELECTRA or RoBERTa)")
    out: str = option(help="output directory: model/, results.json, predictions")
    lr: float = option(None, "peak learning rate", shown=FAMILY_OR_RECIPE)
    batch_size: int = option(None, "training examples per step", shown=RECIPE)
    max_steps: int = option(None, "optimizer steps", shown=RECIPE)
    warmup_steps: int = option(
        None, "steps of linear warm-up; a family's is a share of max_steps, and so is the "
              "recipe's when only --max-steps is given (rounded half up)",
        shown=FAMILY_OR_RECIPE)
    max_seq_length: int = option(None, "tokens per example, longer ones truncated",
                                 shown=RECIPE)
    dropout: float = option(None, "hidden and attention dropout", shown=FAMILY_OR_RECIPE)
    classifier_dropout: float = option(0.1, "dropout before the task head")
    weight_decay: float = option(None, "AdamW's decoupled weight decay", shown=FAMILY)
    layer_decay: float = option(
        None, "layer-wise learning-rate decay in (0, 1]: the head trains at the lr, layer j of "
              "L (1 = lowest) at lr * X^(L+2-j), the embeddings at lr * X^(L+2); 1 is off",
        shown=FAMILY)
    layer_decay_rule: str = option(
        None, "which layers --layer-decay slows: 'head-to-embeddings' (the layers and the "
              "embeddings, as above; ELECTRA's) or 'layers-only' (only the layers, layer j at "
              "lr * X^(L-j); embeddings and head at the lr; XLNet's); the previous release's "
              "names 'electra' and 'xlnet' are still accepted",
        choices=(*RULES, *RULE_ALIASES), shown=FAMILY)
    adam_beta2: float = option(None, "AdamW's beta2, the decay of its squared-gradient "
                                     "average", shown=FAMILY)
    adam_epsilon: float = option(None, "AdamW's epsilon, added to the root of its "
                                       "squared-gradient average", shown=FAMILY)
    eval_every: int = option(None, "steps between dev evaluations", shown="max_steps / 10")
    eval_batch_size: int = option(64, "examples per batch when evaluating")
    log_every: int = option(50, "steps between training-loss lines (the mean loss since the "
                                "last one); the only times the loop waits for the device")
    # Where and how it computes (tasks/runtime.py): the device is torchrun's LOCAL_RANK GPU,
    # else the GPU, else the CPU.
    precision: str = option("auto", "arithmetic: auto is bf16 on CUDA, fp32 on a CPU; fp16 "
                                    "adds a gradient scaler", choices=PRECISIONS)
    compile: bool | str | None = option(
        None, "torch.compile the model (automatic dynamic shapes: batches vary in length and "
              "size): auto = eager (measured faster for fine-tuning, docs/finetuning.md); "
              "true = torch's default mode; or a mode: "
              "reduce-overhead, max-autotune-no-cudagraphs, max-autotune; --compile [MODE] / "
              "--no-compile", choices=COMPILE_CHOICES, shown="auto")
    seed: int = option(42, "seed of the head's initialisation and the data order")
    seeds: int = option(1, "runs with seeds seed, seed+1, ...; results report the median")
    # Generic tasks: column names, and a dev split carved from train when there is no dev.
    text_a: str = option("sentence", "generic tasks: the column (field) of the first text")
    text_b: str | None = option(None, "generic tasks: the column of the second text, if any")
    label_column: str = option("label", "generic tasks: the column of the label")
    dev_fraction: float = option(0.1, "generic tasks without a dev file: the share of train "
                                      "held out as dev")
    # GLUE and generic tables are tokenized once into a cache (tasks/table_cache.py).
    workers: int = option(None, "GLUE and generic tasks: processes that tokenize a table the "
                                "cache does not hold yet", shown="the CPUs this process may use")
    cache_dir: str | None = option(
        None, "GLUE and generic tasks: where tokenized tables are kept, found again by every "
              "later seed and run with the same table and tokenizer (safe to delete)",
        shown="$LITEBERT_DATA/tables, else ~/.cache/litebert/tables")
    # SQuAD.
    doc_stride: int = option(128, "SQuAD: tokens between the starts of a context's windows")
    max_query_length: int = option(64, "SQuAD: question tokens kept")
    n_best_size: int = option(20, "SQuAD: start and end candidates per window")
    max_answer_length: int = option(30, "SQuAD: longest answer, in tokens")
    qa_head: str = option(
        "auto", "SQuAD: 'span' (a start and an end logit per token, BERT's), 'beam' (XLNet's: "
                "a start, an end conditioned on it and an answer classifier, decoded by beam "
                "search), or 'auto': beam for a backbone whose summary token is the last one "
                "(XLNet's <cls>), else span", choices=("auto", "span", "beam"))
    # Filled in: which defaults came from the model's family (results.json `defaults`).
    family_defaults: dict[str, Any] = option(
        None, "set from the model directory: its family, the source of the family's defaults "
              "and the values taken from them")

    def __post_init__(self) -> None:
        if self.task not in RECIPES:
            raise FinetuneError(f"unknown task {self.task!r}; choose from {', '.join(RECIPES)}")
        if self.family_defaults is None:  # copies (dataclasses.replace) keep the record
            self.family_defaults = self._take_family_defaults()
        recipe = RECIPES[self.task]
        for name in ("lr", "batch_size", "dropout", "max_seq_length"):
            if getattr(self, name) is None:
                setattr(self, name, getattr(recipe, name))
        if rule_name(self.layer_decay_rule) not in RULES:
            raise FinetuneError(f"layer_decay_rule={self.layer_decay_rule!r}: choose "
                                f"{' or '.join(RULES)}")
        self.layer_decay_rule = rule_name(self.layer_decay_rule)  # an earlier name: today's
        if not 0 < self.layer_decay <= 1:  # also rejects NaN
            raise FinetuneError(f"layer_decay={self.layer_decay}: must lie in (0, 1]; "
                                f"1 turns layer-wise learning-rate decay off")
        share = self.family_defaults["values"].get("warmup_share")
        if share is not None and self.warmup_steps is None:  # the share of this run's steps
            total = recipe.max_steps if self.max_steps is None else self.max_steps
            self.warmup_steps = int(share * total + 0.5)
        try:  # the warm-up rule of pre-training too: a shorter run keeps the recipe's share
            self.max_steps, self.warmup_steps = resolve_warmup(
                recipe.max_steps, recipe.warmup_steps, self.max_steps, self.warmup_steps)
        except ValueError as err:
            raise FinetuneError(f"finetune {self.task}: {err}") from None
        if self.eval_every is None:
            self.eval_every = max(1, self.max_steps // 10)
        if self.workers is None:
            self.workers = usable_cpus()
        if self.workers < 1:
            raise FinetuneError(f"workers={self.workers}: must be at least 1")
        if self.seeds < 1:
            raise FinetuneError(f"seeds={self.seeds}: must be at least 1")
        if self.log_every < 1:
            raise FinetuneError(f"log_every={self.log_every}: must be at least 1")
        if self.precision not in PRECISIONS:
            raise FinetuneError(f"precision={self.precision!r}: choose from "
                                f"{', '.join(PRECISIONS)}")
        try:
            self.compile = compile_setting(self.compile, "finetune config")
        except RunConfigError as err:
            raise FinetuneError(str(err)) from None
        if self.qa_head not in ("auto", "span", "beam"):
            raise FinetuneError(f"qa_head={self.qa_head!r}: choose auto, span or beam")

    def _take_family_defaults(self) -> dict[str, Any]:
        """Fill what was not given from the model family's defaults; the record of them."""
        name, theirs = read_family_defaults(self.model, self.task)
        taken = {}
        for key, value in theirs.values().items():
            field = "warmup_steps" if key == "warmup_share" else key  # applied after max_steps
            if getattr(self, field) is None:
                taken[key] = value
                if field == key:
                    setattr(self, key, value)
        if taken:
            shown = (f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in taken.items())
            log.info("%s is a %s model: fine-tuning defaults %s (%s)", self.model, name,
                     ", ".join(shown), theirs.source)
        return {"family": name, "source": theirs.source, "values": taken}


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
    runtime: Any  # the run's litebert.tasks.runtime.Runtime
    train_rows: Sequence  # a list of rows, or a TableRows (tasks/table_inputs.py)
    train_lengths: Sequence[int]

    def collate(self, rows: list) -> dict: ...

    def build_model(self) -> Any: ...

    def evaluate(self, model: Any, out: Any) -> dict[str, float]: ...

    def score(self, metrics: dict[str, float]) -> float: ...

    def save(self, model: Any, directory: Any) -> None: ...

    def write_predictions(self, model: Any, out: Path, dev: bool = True) -> list[Path]: ...

    # Whether write_predictions(dev=False) writes anything (a test split): only then does the
    # loop load the best model back after training.
    writes_test_predictions: bool


class NoPredictionFiles:
    """TaskAdapter.write_predictions of a task that writes no prediction files."""

    writes_test_predictions = False

    def write_predictions(self, model: Any, out: Path, dev: bool = True) -> list[Path]:
        return []
