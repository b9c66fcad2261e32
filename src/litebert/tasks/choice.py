"""Multiple choice: `--task choice` (a table of your own, SWAG's columns by default,
tasks/choice_data.py) and `--task race` (RACE's folders, tasks/race.py), one adapter.

Each question is a context and C choices; choice i is encoded as the pair (context, choice i)
in the tokenizer's template ([CLS] context [SEP] choice [SEP]; RoBERTa's <s> context </s></s>
choice </s>; XLNet's with <cls> last), the context cut first when the pair is too long.
A batch is (B, C, T); EncoderForMultipleChoice scores each choice from its pooled output.
Questions with fewer choices than the batch's C get padding choices and a choice_mask, so a
padding choice never wins and adds nothing to the loss.

What sets the two apart is a preset: its reader, its metrics and its predictions file. RACE's
(`RacePreset`): the article as context, the question with each option (race.option_text),
accuracy on middle, high and all questions, OUT/predictions.json {id: "A".."D"}. A table's
(`TablePreset`): the columns of ChoiceOptions (`cfg.task_options`), accuracy, and
OUT/predictions.jsonl with each question's id, gold label, prediction and per-choice scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from litebert.model import EncoderForMultipleChoice
from litebert.tasks.base import FinetuneConfig, model_overrides, reported
from litebert.tasks.batching import length_batches, pad_for
from litebert.tasks.choice_data import read_choices, split_path, write_choice_predictions
from litebert.tasks.examples import ChoiceExample
from litebert.tasks.metrics import choice_accuracy, race_accuracy
from litebert.tasks.race import race_choices, read_race, write_race_predictions
from litebert.tasks.runtime import Runtime
from litebert.tasks.word_labels import IGNORE_INDEX
from litebert.tokenization import Tokenizer, TokenizerError

ENCODED = ("input_ids", "token_type_ids", "attention_mask")


class Preset(Protocol):
    """What one multiple-choice task adds to ChoiceTask."""

    primary: str  # the metric "best on dev" maximises

    def read(self, split: str) -> list[ChoiceExample]: ...

    def metrics(self, predictions: np.ndarray, dev: list[ChoiceExample]) -> dict[str, float]:
        ...

    def write(self, dev: list[ChoiceExample], predictions: list[int],
              scores: list[list[float]], out: Path) -> Path: ...


class RacePreset:
    """RACE as distributed; its metric and predictions file are RACE's own (the same bytes
    whatever other tables the adapter serves)."""

    primary = "all"

    def __init__(self, cfg: FinetuneConfig):
        self.data = cfg.data

    def read(self, split: str) -> list[ChoiceExample]:
        return race_choices(reported(read_race(self.data, split)))

    def metrics(self, predictions: np.ndarray, dev: list[ChoiceExample]) -> dict[str, float]:
        return race_accuracy(predictions, [ex.label for ex in dev],
                             [str(ex.level) for ex in dev])

    def write(self, dev: list[ChoiceExample], predictions: list[int],
              scores: list[list[float]], out: Path) -> Path:
        return write_race_predictions(dev, predictions, out / "predictions.json")


class TablePreset:
    """A table of questions with the columns of cfg.task_options (ChoiceOptions)."""

    primary = "accuracy"

    def __init__(self, cfg: FinetuneConfig):
        self.data, self.options = cfg.data, cfg.task_options

    def read(self, split: str) -> list[ChoiceExample]:
        return reported(read_choices(split_path(self.data, split), self.options))

    def metrics(self, predictions: np.ndarray, dev: list[ChoiceExample]) -> dict[str, float]:
        return choice_accuracy(predictions, [ex.label for ex in dev])

    def write(self, dev: list[ChoiceExample], predictions: list[int],
              scores: list[list[float]], out: Path) -> Path:
        return write_choice_predictions(dev, predictions, scores, out / "predictions.jsonl")


class ChoiceTask:
    """The adapter of every multiple-choice task (the protocol is tasks/base.py's)."""

    writes_test_predictions = False  # the dev split's answers only: no test split is read

    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.preset: Preset = RacePreset(cfg) if cfg.task == "race" else TablePreset(cfg)
        self.primary = self.preset.primary
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        train = self.preset.read("train") if training else []
        self.dev = self.preset.read("dev")
        self.train_rows = [self.encode(ex) for ex in train]
        self.train_lengths = [max(map(len, r["input_ids"])) for r in self.train_rows]
        self.dev_rows = [self.encode(ex) for ex in self.dev]
        self.last_predictions: list[int] = []
        self.last_scores: list[list[float]] = []  # per dev question, a logit per choice
        # Filler rows (finetune.py) take label -100, which cross-entropy ignores.
        self.dummy_labels = {"labels": IGNORE_INDEX}
        self.bucket_limit = runtime.bucket_limit(cfg.max_seq_length)

    def encode(self, ex: ChoiceExample) -> dict:
        """A question as lists of C encoded pairs, one per choice, and its label."""
        encoded = [self._pair(ex.context, choice) for choice in ex.choices]
        row: dict[str, Any] = {k: [e[k] for e in encoded] for k in ENCODED}
        if ex.label is not None:
            row["labels"] = ex.label
        return row

    def _pair(self, context: str, choice: str) -> dict[str, list]:
        """(context, choice) in the template, the context cut to fit."""
        length = self.cfg.max_seq_length
        try:
            return self.tokenizer(context, choice, truncation="only_first", max_length=length)
        except TokenizerError:  # the choice alone does not fit: both are cut, longer first
            return self.tokenizer(context, choice, truncation="longest_first", max_length=length)

    def collate(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        """(B, C, T) blocks padded to the longest choice of the batch, C its most choices. A
        question with fewer is filled up with copies of its first choice (real tokens: a
        block of padding alone would leave attention nothing to attend to) that choice_mask
        (B, C) marks 0; a batch of questions with C choices each has no mask."""
        most = max(len(r["input_ids"]) for r in rows)
        if all(len(r["input_ids"]) == most for r in rows):
            return pad_for(self.tokenizer, rows, max_length=self.bucket_limit)
        filled = [{k: v + v[:1] * (most - len(v)) if k in ENCODED else v for k, v in r.items()}
                  for r in rows]
        batch = pad_for(self.tokenizer, filled, max_length=self.bucket_limit)
        batch["choice_mask"] = torch.tensor([[j < len(r["input_ids"]) for j in range(most)]
                                             for r in rows])  # (B, C) bool
        return batch

    def build_model(self) -> EncoderForMultipleChoice:
        return EncoderForMultipleChoice.from_pretrained(self.cfg.model, files=self.cfg.model_files,
                                                        **model_overrides(self.cfg))

    def evaluate(self, model, out: Path) -> dict[str, float]:
        """The preset's metrics on dev (the batches shared by the ranks); the answers and
        scores kept for the predictions file."""
        rows = self.dev_rows
        most = max((len(r["input_ids"]) for r in rows), default=1)
        lengths = [max(map(len, r["input_ids"])) for r in rows]
        # eval_batch_size counts encoded pairs: this many questions of the most choices
        batches = length_batches(lengths, max(1, self.cfg.eval_batch_size // most), None)

        def collate(ids):
            return self.collate([{k: v for k, v in rows[i].items() if k != "labels"}
                                 for i in ids])

        outputs = self.runtime.evaluate_batches(model, batches, collate, lambda o: [o.logits])
        predictions = np.zeros(len(rows), dtype=np.int64)
        scores: list[list[float]] = [[] for _ in rows]
        for ids, (logits,) in zip(batches, outputs, strict=True):  # (B, C) float32
            predictions[ids] = logits.argmax(-1)
            for i, row in zip(ids.tolist(), logits, strict=True):
                scores[i] = row[:len(rows[i]["input_ids"])].tolist()  # its own choices
        self.last_predictions, self.last_scores = predictions.tolist(), scores
        return self.preset.metrics(predictions, self.dev)

    def score(self, metrics: dict[str, float]) -> float:
        return metrics[self.primary]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        self.write_predictions(model, directory.parent)

    def write_predictions(self, model, out: Path, dev: bool = True) -> list[Path]:
        """With dev, the last evaluation's answer to each dev question, in the preset's file
        under `out` (no test split is read)."""
        if not dev or not self.runtime.is_main:
            return []
        return [self.preset.write(self.dev, self.last_predictions, self.last_scores, Path(out))]
