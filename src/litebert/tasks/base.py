"""What every fine-tuning task shares: the config (the options of tasks/finetune_options.py,
filled in from the model family's defaults, see tasks/family_defaults.py, then from the task's
recipe in tasks/registry.py), the errors, and the protocol a task adapter follows.

A task adapter (tasks/sequence.py, qa.py, choice.py, tokens.py, embedding.py) is built from a
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

and may offer

    train_backward(model, batch_ids) -> loss
                                    forward and backward of this rank's rows of a step's
                                    global batch (runtime.rows_of), in place of the loop's
                                    (a mean loss over them, scaled by `weight * world`), for
                                    a loss that is not such a mean (in-batch negatives); the
                                    gradients it leaves must average over DDP's ranks to one
                                    process's on the whole batch, through runtime.scaler when
                                    there is one; returns this rank's share of the batch's
                                    mean loss, detached
    dummy_labels                    {field: value} that makes a row count nothing in the
                                    loss (e.g. {"labels": -100}): a short training batch
                                    is filled up to the run's batch size with copies of
                                    its first row so labelled (batching.pad_rows), one
                                    shape for a compiled step; None (or absent) for a loss
                                    that cannot ignore a row (regression's, the beam
                                    head's, in-batch negatives'): its short batches stay
                                    short

The task's own options (its entry in tasks/registry.py) are `cfg.task_options`.

An adapter with no prediction files takes write_predictions from `NoPredictionFiles`. The
loop (tasks/finetune.py) knows no task: what is special to one stays in its adapter.

Under torchrun every rank calls evaluate and write_predictions: an adapter runs its
batches through `runtime.evaluate_batches`, which shares them among the ranks and gives every
rank all outputs in order, so each rank computes the same metrics; files are written by rank
0 alone (`runtime.is_main`). `save` is called on rank 0 only.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from litebert.config import ModelConfig
from litebert.families import DEFAULT_MODEL_TYPE
from litebert.family_names import FAMILY_TITLES
from litebert.model.hub import ModelFiles
from litebert.options import given
from litebert.tasks.family_defaults import model_family_defaults
from litebert.tasks.finetune_options import (
    RULES,
    FinetuneOptions,
    TaskOptionError,
    given_task_options,
    rule_name,
    task_options,
)
from litebert.tasks.model_source import read_model_files_of
from litebert.tasks.registry import TASKS
from litebert.train.optimizers import OPTIMIZERS, unknown
from litebert.train.run_config import PRECISIONS, RunConfigError, compile_setting
from litebert.train.schedule import resolve_warmup

log = logging.getLogger("litebert")


class FinetuneError(ValueError):
    """A bad fine-tuning request; the message says what to change."""


@dataclass
class FinetuneConfig(FinetuneOptions):
    """A fine-tuning run's options with nothing left unset: what was not given comes from the
    model family's defaults, then from the task's recipe. Constructing it reads no file:
    `finetune_config` reads the model's config.json (once) into `model_files`."""

    # The model directory's config.json as read (tasks/model_source.py), which loading the
    # weights takes too; None when none was readable, or for a config built without
    # finetune_config. Not an option: not in results.json, not on the command line.
    model_files: ModelFiles | None = dataclasses.field(default=None, repr=False,
                                                       compare=False)

    @property
    def model_config(self) -> ModelConfig | None:
        """The model directory's config as read once (None: see model_files)."""
        return None if self.model_files is None else self.model_files.config

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise FinetuneError(f"unknown task {self.task!r}; choose from {', '.join(TASKS)}")
        try:
            self.task_options = task_options(self.task, self.task_options)
        except TaskOptionError as err:
            raise FinetuneError(str(err)) from None
        if self.optimizer not in OPTIMIZERS:
            raise unknown(self.optimizer, "finetune config optimizer")
        if self.family_defaults is None:  # copies (dataclasses.replace) keep the record
            self.family_defaults = self._take_family_defaults()
        recipe = TASKS[self.task].recipe
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
        if self.seeds < 1:
            raise FinetuneError(f"seeds={self.seeds}: must be at least 1")
        if self.log_every < 1:
            raise FinetuneError(f"log_every={self.log_every}: must be at least 1")
        if self.precision not in PRECISIONS:
            raise FinetuneError(f"precision={self.precision!r}: choose from "
                                f"{', '.join(PRECISIONS)}")
        try:
            self.compile = compile_setting(self.compile, "finetune config", regional=False)
        except RunConfigError as err:
            raise FinetuneError(str(err)) from None

    def _take_family_defaults(self) -> dict[str, Any]:
        """Fill what was not given from the model family's defaults; the record of them."""
        family, theirs = model_family_defaults(self.model_config, self.task)
        taken = {}
        for key, value in theirs.values().items():
            field = "warmup_steps" if key == "warmup_share" else key  # applied after max_steps
            if getattr(self, field) is None:
                taken[key] = value
                if field == key:
                    setattr(self, key, value)
        # Said only of a family that was read: a directory without a readable config.json is
        # reported by loading the model, before any step, and has no family to speak of.
        if taken and family is not None:
            shown = (f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in taken.items())
            log.info("%s: model family %s; its fine-tuning defaults %s (%s)", self.model,
                     FAMILY_TITLES.get(family, family), ", ".join(shown), theirs.source)
        return {"family": family or DEFAULT_MODEL_TYPE, "source": theirs.source,
                "values": taken}


def finetune_config(**values: Any) -> FinetuneConfig:
    """A FinetuneConfig from flat values: those that are not options every task shares are
    the task's own (tasks/registry.py) and go to its task_options; one the task does not
    take is an error naming the tasks that do. The model directory's config.json is read
    here, once (model_files), unless given."""
    shared = {f.name for f in dataclasses.fields(FinetuneConfig)}
    own = {k: values.pop(k) for k in list(values) if k not in shared}
    instance = values.pop("task_options", None)
    if own and instance is not None:
        raise FinetuneError(f"{', '.join(own)}: give the task's options either flat or as "
                            f"task_options, not both")
    if "model_files" not in values:
        values["model_files"] = read_model_files_of(values.get("model"))
    return FinetuneConfig(**values, task_options=own or instance)


def config_from_args(args: argparse.Namespace) -> FinetuneConfig:
    """The config of `litebert finetune` / `evaluate`: what was given on the command line."""
    return finetune_config(**given(args, FinetuneConfig), **given_task_options(args))


def config_record(cfg: FinetuneConfig) -> dict[str, Any]:
    """The run's options as results.json records them: the shared ones and the task's own
    in one flat mapping, the family's defaults last."""
    record = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name not in ("task_options", "family_defaults", "model_files")}
    if cfg.task_options is not None:
        record.update(dataclasses.asdict(cfg.task_options))
    record["family_defaults"] = cfg.family_defaults
    return record


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
    # {field: value} that makes a filler row count nothing in the loss (batching.pad_rows),
    # or None when the task's loss cannot ignore a row (its short batches stay short).
    dummy_labels: dict[str, Any] | None


class NoPredictionFiles:
    """TaskAdapter.write_predictions of a task that writes no prediction files."""

    writes_test_predictions = False

    def write_predictions(self, model: Any, out: Path, dev: bool = True) -> list[Path]:
        return []
