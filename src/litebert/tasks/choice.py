"""RACE: multiple choice over four options, [CLS] article [SEP] question + option [SEP] (in
the tokenizer's template: RoBERTa's is <s> article </s></s> question + option </s>).

As in the official ALBERT code, a question with a blank ("_") gets the option written into
the blank; otherwise the option follows the question. The article is cut first when the
pair is too long. EncoderForMultipleChoice scores each option from its pooled output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from litebert.model import EncoderForMultipleChoice
from litebert.tasks.base import FinetuneConfig, model_overrides, reported
from litebert.tasks.batching import length_batches, pad_for
from litebert.tasks.metrics import race_accuracy
from litebert.tasks.race import read_race, write_race_predictions
from litebert.tasks.runtime import Runtime
from litebert.tokenization import Tokenizer


def option_text(question: str, option: str) -> str:
    return question.replace("_", option) if "_" in question else f"{question} {option}"


class RaceTask:
    primary = "all"

    def __init__(self, cfg: FinetuneConfig, runtime: Runtime, training: bool = True):
        self.cfg, self.runtime = cfg, runtime
        self.tokenizer = Tokenizer.from_pretrained(cfg.model)
        train = reported(read_race(cfg.data, "train")) if training else []
        self.dev = reported(read_race(cfg.data, "dev"))
        self.train_rows = [self.encode(ex) for ex in train]
        self.train_lengths = [max(map(len, r["input_ids"])) for r in self.train_rows]
        self.dev_rows = [self.encode(ex) for ex in self.dev]
        self.last_predictions: list[int] = []

    def encode(self, ex) -> dict:
        encoded = [self.tokenizer(ex.article, option_text(ex.question, option),
                                  truncation="only_first", max_length=self.cfg.max_seq_length)
                   for option in ex.options]
        row = {k: [e[k] for e in encoded] for k in ("input_ids", "token_type_ids",
                                                     "attention_mask")}
        if ex.label is not None:
            row["labels"] = ex.label
        return row

    def collate(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        """(B, C, T) blocks padded to the longest option of the batch."""
        return pad_for(self.tokenizer, rows)

    def build_model(self) -> EncoderForMultipleChoice:
        return EncoderForMultipleChoice.from_pretrained(self.cfg.model, **model_overrides(self.cfg))

    def evaluate(self, model, out: Path) -> dict[str, float]:
        """Accuracy on dev (the batches shared by the ranks); the answers kept for the
        predictions file."""
        predictions = np.zeros(len(self.dev_rows), dtype=np.int64)
        lengths = [max(map(len, r["input_ids"])) for r in self.dev_rows]
        batches = length_batches(lengths, max(1, self.cfg.eval_batch_size // 4), None)

        def collate(ids):
            return self.collate([{k: v for k, v in self.dev_rows[i].items() if k != "labels"}
                                 for i in ids])

        outputs = self.runtime.evaluate_batches(model, batches, collate, lambda o: [o.logits])
        for ids, (logits,) in zip(batches, outputs, strict=True):  # (B, 4) float32
            predictions[ids] = logits.argmax(-1)
        self.last_predictions = predictions.tolist()
        return race_accuracy(predictions, [ex.label for ex in self.dev],
                             [ex.level for ex in self.dev])

    def score(self, metrics: dict[str, float]) -> float:
        return metrics["all"]

    def save(self, model, directory: Path) -> None:
        model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        self.write_predictions(model, directory.parent)

    writes_test_predictions = False  # RACE's test split is not read here

    def write_predictions(self, model, out: Path, dev: bool = True) -> list[Path]:
        """With dev, OUT/predictions.json: the last evaluation's answer to each dev question
        (RACE has no test split here)."""
        if not dev or not self.runtime.is_main:
            return []
        return [write_race_predictions(self.dev, self.last_predictions,
                                       Path(out) / "predictions.json")]
